"""The Python 3.13 runtime (`images/runtime.py`): what its unpacking keeps of mmdebstrap's tar, that an
entry it did not finish or that someone changed is made again rather than used, and (marked `harness`:
the first run downloads Debian 13 packages) that the real one runs a venv on this host."""

from __future__ import annotations

import io
import json
import os
import shutil
import stat
import subprocess
import tarfile
from pathlib import Path
from typing import Any

import pytest

from harnessrl.harnesses import get_harness
from harnessrl.harnesses.install import lock_digest
from harnessrl.images import runtime
from harnessrl.images.runtime import (
    LAUNCHER,
    MARKER,
    ensure_runtime,
    launcher_text,
    ready,
    runtime_digest,
    runtime_python,
    runtime_root,
    unpack_root,
)
from harnessrl.sandbox import identity
from harnessrl.sandbox.folders import default_base_dir
from harnessrl.types import HarnessError


def tar_of(*members: tuple[tarfile.TarInfo, bytes | None]) -> io.BytesIO:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for info, data in members:
            if data is not None:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    out.seek(0)
    return out


def entry(name: str, kind: bytes = tarfile.REGTYPE, mode: int = 0o644, **kw: object) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.uid, info.gid = kind, mode, 4321, 4321
    for key, value in kw.items():
        setattr(info, key, value)
    return info


def test_unpack_keeps_files_folders_and_links_only_all_ours_and_read_only_to_others(tmp_path: Path) -> None:
    stream = tar_of(
        (entry("./usr", tarfile.DIRTYPE, 0o1777), None),
        (entry("./usr/bin/su", mode=0o4755), b"#!/bin/sh\n"),
        (entry("./usr/shared.txt", mode=0o666), b"text"),
        (entry("./usr/same.txt", tarfile.LNKTYPE, linkname="usr/shared.txt"), None),
        (entry("./etc/alt", tarfile.SYMTYPE, 0o777, linkname="/etc/elsewhere"), None),
        (entry("./dev/null", tarfile.CHRTYPE, 0o666, devmajor=1, devminor=3), None),
        (entry("./dev/fifo", tarfile.FIFOTYPE, 0o666), None),
    )
    dest = tmp_path / "root"
    dest.mkdir()
    unpack_root(stream, dest)
    found = {
        str(p.relative_to(dest)): (stat.S_IFMT(p.lstat().st_mode), stat.S_IMODE(p.lstat().st_mode))
        for p in dest.rglob("*")
    }
    assert {k: v for k, v in found.items() if not k.startswith("etc/alt")} == {
        "usr": (stat.S_IFDIR, 0o755),
        "usr/bin": (stat.S_IFDIR, 0o755),
        "usr/bin/su": (stat.S_IFREG, 0o755),
        "usr/shared.txt": (stat.S_IFREG, 0o644),
        "usr/same.txt": (stat.S_IFREG, 0o644),
        "etc": (stat.S_IFDIR, 0o755),
    }
    assert os.readlink(dest / "etc/alt") == "/etc/elsewhere"  # a link of the root, never followed by us
    assert {p.lstat().st_uid for p in dest.rglob("*")} == {os.geteuid()}


def test_unpack_refuses_a_member_outside_the_root(tmp_path: Path) -> None:
    (tmp_path / "root").mkdir()
    with pytest.raises(tarfile.TarError):
        unpack_root(tar_of((entry("../escaped"), b"x")), tmp_path / "root")
    assert not (tmp_path / "escaped").exists()


@pytest.fixture
def fake_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """`_build` replaced by one that writes only the launcher (and a file naming the build) in no time;
    the cache (and the build lock) under tmp_path. Yields the list of folders it built."""
    monkeypatch.setenv("HARNESSRL_CACHE", str(tmp_path / "cache"))
    built: list[Path] = []

    def build(work: Path, root: Path, mirror: str | None) -> None:
        (work / LAUNCHER).parent.mkdir(parents=True)
        (work / LAUNCHER).write_text(launcher_text(root))
        (work / LAUNCHER).chmod(0o755)
        (work / "build").write_text(str(len(built)))
        built.append(work)

    monkeypatch.setattr(runtime, "_build", build)
    return built


def make_good(root: Path) -> None:
    (root / LAUNCHER).parent.mkdir(parents=True)
    (root / LAUNCHER).write_text(launcher_text(root))
    (root / MARKER).write_text(json.dumps({"digest": runtime_digest()}))
    root.chmod(0o755)


def test_a_runtime_is_made_once_then_found(fake_build: list[Path], tmp_path: Path) -> None:
    root, seconds = ensure_runtime()
    assert root == tmp_path / "cache" / "runtimes" / f"python3.13-{runtime_digest()}" == runtime_root()
    assert ready(root) and seconds > 0.0 and len(fake_build) == 1
    info = json.loads((root / MARKER).read_text())
    assert (info["digest"], info["python"], info["suite"]) == (runtime_digest(), "3.13", "trixie")
    assert ensure_runtime() == (root, 0.0) and len(fake_build) == 1
    assert runtime_python(root).read_text() == launcher_text(root)
    assert sorted(p.name for p in root.parent.iterdir()) == [root.name]  # no temporary folder left


def spoil(how: str, root: Path, elsewhere: Path) -> None:
    """Leave at `root` an entry that must not be trusted, in the way `how` names."""
    if how == "a link":
        make_good(elsewhere)
        root.symlink_to(elsewhere)
        return
    if how == "a file":
        root.write_text("not a runtime")
        return
    make_good(root)
    if how == "half made":
        (root / MARKER).unlink()
    elif how == "marker a link":
        (elsewhere / "marker").parent.mkdir(parents=True, exist_ok=True)
        (root / MARKER).rename(elsewhere / "marker")
        (root / MARKER).symlink_to(elsewhere / "marker")
    elif how == "other digest":
        (root / MARKER).write_text(json.dumps({"digest": "0" * 12}))
    elif how == "launcher changed":
        (root / LAUNCHER).write_text('#!/bin/sh\nexec /tmp/evil "$@"\n')
    elif how == "group-writable":
        root.chmod(0o775)


@pytest.mark.parametrize(
    "how",
    ["half made", "marker a link", "other digest", "launcher changed", "group-writable", "a link", "a file"],
)
def test_an_entry_not_finished_or_changed_is_made_again_not_used(
    fake_build: list[Path], tmp_path: Path, how: str
) -> None:
    root = runtime_root()
    root.parent.mkdir(parents=True)
    elsewhere = tmp_path / "elsewhere"
    spoil(how, root, elsewhere)
    assert not ready(root)
    assert ensure_runtime()[0] == root
    assert len(fake_build) == 1 and ready(root) and not root.is_symlink()
    assert (root / "build").read_text() == "0"  # the fresh build, not the old entry
    if how == "a link":  # the link was removed, not what it pointed at
        assert ready(elsewhere) and (elsewhere / "build").exists() is False  # untouched


def test_a_runtime_harness_installs_into_a_folder_of_its_lock_and_the_runtime() -> None:
    kimi = get_harness("kimi-cli")
    folder = kimi.install_dir(Path("/cache"))
    assert folder.parent == Path("/cache/harnesses") and folder.name.startswith("kimi-cli-1.51.0-")
    assert folder.name != f"kimi-cli-1.51.0-{lock_digest(kimi.lock_dir)}"  # the runtime's digest is mixed in


@pytest.mark.harness
@pytest.mark.skipif(shutil.which("mmdebstrap") is None, reason="mmdebstrap not installed")
def test_the_real_runtime_runs_a_venv_and_leaves_the_system_libraries_to_children(tmp_path: Path) -> None:
    root, _ = ensure_runtime()
    python = str(runtime_python(root))
    venv = tmp_path / "venv"
    subprocess.run([python, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    code = (
        "import os, subprocess, sys; print(sys.version_info[:2], sys.prefix, sys.base_prefix); "
        "sh = ['sh', '-c', 'echo ${LD_LIBRARY_PATH:-none}']; "
        "print(subprocess.run(sh, capture_output=True, text=True).stdout.strip())"
    )
    out = subprocess.run([str(venv / "bin/python"), "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.splitlines() == [f"(3, 13) {venv} {root / 'usr'}", "none"], out.stderr


@pytest.mark.harness
@pytest.mark.skipif(shutil.which("mmdebstrap") is None, reason="mmdebstrap not installed")
@pytest.mark.skipif(not identity.drops_privileges(), reason="as root only: pip runs it as a leased uid")
def test_a_leased_uid_runs_the_runtime_behind_a_folder_it_cannot_pass(tmp_path: Path) -> None:
    """As root, a PyPI install's `pip download` and a lock's resolver run the runtime as a leased uid.
    Under a folder that uid cannot pass through (root's 0700 home, a `mktemp -d` checkout) the launcher
    cannot start there, so both run `Interpreter.leased()`: the loader and interpreter through the
    staging bind (the resolver its own pip, not a venv whose python would link to the launcher)."""
    from harnessrl.harnesses.confine import run_as, unprivileged
    from harnessrl.harnesses.lockfiles import PIP_FILE, Interpreter, lock_pypi

    root, _ = ensure_runtime()
    closed = tmp_path / "closed"
    (closed / "runtime").mkdir(parents=True)
    closed.chmod(0o700)
    subprocess.run(["mount", "--bind", str(root), str(closed / "runtime")], check=True)
    try:
        interpreter = Interpreter.of_runtime(closed / "runtime")
        code = ["-c", "import sys, pip; print(sys.version_info[:2], sys.prefix[-4:], pip.__name__)"]
        run: dict[str, Any] = {"env": {"PATH": "/usr/bin:/bin"}, "cwd": Path("/"), "timeout_s": 60}
        with unprivileged() as uid:
            with pytest.raises(HarnessError, match=r"^the launcher: cannot run .*/closed/runtime/.* as uid"):
                run_as(uid, [interpreter.python, *code], what="the launcher", **run)  # out of its reach
            leased = run_as(uid, [*interpreter.leased(), *code], what="the leased command", **run)
        assert (leased.returncode, leased.stdout) == (0, "(3, 13) /usr pip\n"), leased.stderr
        lock_pypi("six==1.17.0", tmp_path / "lock", interpreter)  # `harnessrl harness lock`'s resolver
        pins = (tmp_path / "lock" / PIP_FILE).read_text().splitlines()
        assert pins[0].endswith(
            f"for {interpreter.python}, wheels only: `scripts/lock_harnesses` wrote this file"
        )
        assert pins[1:] == [
            "six==1.17.0 \\",
            "    --hash=sha256:4721f391ed90541fddacab5acf947aa0d3dc7d27b2e1e8eda2be8970586c3274",
        ]
    finally:
        identity.unstage(default_base_dir())  # before the bind it staged goes
        subprocess.run(["umount", str(closed / "runtime")], check=True)
