"""Attacks from inside a sandbox whose `/` is an image (issue 32.3), each shown blocked: the agent may
change any path of its root, and nothing of it reaches the cached image, the host, or (beyond
what it left in its layer, copied without trusting it) the next sandbox of the image."""

from __future__ import annotations

import hashlib
import os
import shutil
import uuid
from pathlib import Path

import pytest

from harnessrl.images import ImageRoot
from harnessrl.rollout.environment import layer_workspace
from harnessrl.sandbox import Sandbox, SandboxSpec

pytestmark = [pytest.mark.security, pytest.mark.usefixtures("sandbox_agent")]
WATCHED = ("usr/bin/python3.11", "etc/passwd", "usr/lib/python3.11/os.py", "usr/bin/hello", "bin/sh")


def spec_on(root: ImageRoot, base: Path, **kw: object) -> SandboxSpec:
    return SandboxSpec(image_root=root.path, extra_env=root.env, mount_dir=root.workdir, base_dir=base, **kw)  # type: ignore[arg-type]


def digests(top: Path, names: tuple[str, ...]) -> dict[str, str]:
    return {n: hashlib.sha256((top / n).read_bytes()).hexdigest() for n in names}


async def test_rewriting_python_and_passwd_changes_neither_the_image_nor_the_host(
    image_root: ImageRoot, sb_base: Path
) -> None:
    cached = digests(image_root.path, WATCHED)
    host = digests(Path("/"), ("etc/passwd", os.path.realpath("/usr/bin/python3").lstrip("/")))
    attack = (
        "rm /usr/bin/python3.11 && printf '#!/bin/sh\\necho owned\\n' > /usr/bin/python3.11 && "
        "chmod +x /usr/bin/python3.11 && echo 'root::0:0::/root:/bin/sh' > /etc/passwd && "
        "echo 'raise SystemExit(9)' > /usr/lib/python3.11/os.py && rm /usr/bin/hello && python3 && "
        "cp /bin/true /bin/sh.new && mv /bin/sh.new /bin/sh && /bin/sh -c 'echo sh'; "
        "head -1 /etc/passwd; command -v hello || echo gone"
    )
    async with await Sandbox.create(spec_on(image_root, sb_base)) as sb:
        res = await sb.exec(["/bin/bash", "-c", attack])
    assert res.stdout == "owned\nroot::0:0::/root:/bin/sh\ngone\n", res.stderr
    assert digests(image_root.path, WATCHED) == cached
    assert digests(Path("/"), tuple(host)) == host
    async with await Sandbox.create(spec_on(image_root, sb_base)) as sb:  # the next sandbox: untouched
        res = await sb.exec(["sh", "-c", "python3 -c 'import os; print(os.sep)'; hello; head -1 /etc/passwd"])
    assert res.stdout == "/\nHello, world!\nroot:x:0:0:root:/root:/bin/sh\n", res.stderr


async def test_the_writable_layer_is_bounded_by_the_tmpfs(image_root: ImageRoot, sb_base: Path) -> None:
    before = shutil.disk_usage(image_root.path).free
    async with await Sandbox.create(spec_on(image_root, sb_base, disk_mb=32)) as sb:
        fill = await sb.exec(["sh", "-c", "head -c 100000000 /dev/zero > /usr/fill; echo rc=$?"])
        after = await sb.exec(["sh", "-c", "rm /usr/fill && echo ok > /usr/small && cat /usr/small"])
    assert "No space left on device" in fill.stderr and fill.stdout == "rc=1\n"
    assert after.stdout == "ok\n"  # the sandbox still works once the agent frees its space
    assert shutil.disk_usage(image_root.path).free > before - 16 * 2**20  # none of it went to the host's disk


async def test_the_host_is_not_visible_from_an_image_root(image_root: ImageRoot, sb_base: Path) -> None:
    secret = Path("/tmp") / f"hrl-host-secret-{uuid.uuid4().hex}"
    secret.write_text("HOST-SECRET")
    secret.chmod(0o644)
    try:
        async with await Sandbox.create(spec_on(image_root, sb_base)) as sb:
            res = await sb.exec(["sh", "-c", f"cat {secret}; ls {image_root.path}; ls /root /work/main"])
    finally:
        secret.unlink()
    assert "HOST-SECRET" not in res.stdout + res.stderr
    assert res.stdout == "/root:\n", res.stderr
    assert res.stderr.count("No such file or directory") == 3


async def test_the_layer_copy_follows_no_link_and_blocks_on_no_fifo(
    image_root: ImageRoot, sb_base: Path, tmp_path: Path
) -> None:
    secret = Path("/tmp") / f"hrl-host-secret-{uuid.uuid4().hex}"
    secret.write_text("HOST-SECRET")
    plant = (
        f"ln -s {secret} /app/to-host; ln -s /proc/self/root/etc/shadow /app/to-proc; "
        "mkfifo /app/fifo /etc/fifo; "
        "cp /bin/true /app/suid && chmod 4755 /app/suid; mkdir /app/d && ln -s .. /app/d/up"
    )
    layer = tmp_path / "layer"
    try:
        async with await Sandbox.create(spec_on(image_root, sb_base)) as sb:
            assert (await sb.exec(["sh", "-c", plant])).returncode == 0
            report = await sb.destroy(keep_layer=layer)
        assert report is not None and report.truncated == ""
        assert sorted(report.skipped) == [
            "app/fifo: not a regular file, folder or link",
            "etc/fifo: not a regular file, folder or link",
        ]
        assert os.readlink(layer / "app/to-host") == str(secret)  # kept as a link, never read
        assert not any(
            b"HOST-SECRET" in p.read_bytes() for p in layer.rglob("*") if p.is_file() and not p.is_symlink()
        )
        assert (layer / "app/suid").stat().st_mode & 0o7777 == 0o755  # setuid dropped
        async with await Sandbox.create(spec_on(image_root, sb_base, layers=(layer,))) as sb:
            res = await sb.exec(
                ["sh", "-c", "cat /app/to-host; ls /app/d/up/ | head -1; ls -l /app/suid | cut -c1-10"]
            )
    finally:
        secret.unlink()
    assert "HOST-SECRET" not in res.stdout + res.stderr
    assert res.stdout == "built.txt\n-rwxr-xr-x\n" and "No such file or directory" in res.stderr


async def test_a_workspace_replaced_by_a_link_is_not_copied(
    image_root: ImageRoot, sb_base: Path, tmp_path: Path
) -> None:
    spec = spec_on(image_root, sb_base).model_copy(update={"mount_dir": "/srv/work"})
    async with await Sandbox.create(spec) as sb:
        assert (await sb.exec(["sh", "-c", "cd / && rm -rf /srv && ln -s /etc /srv"])).returncode == 0
        report = await sb.destroy(keep_workspace=tmp_path / "ws")
    assert report is not None and report.truncated.startswith("the workspace /srv/work is no longer a folder")
    assert not (tmp_path / "ws").exists()


async def test_a_link_above_the_working_folder_does_not_copy_the_hosts_files(
    image_root: ImageRoot, sb_base: Path, tmp_path: Path
) -> None:
    """The agent replaces `/app` (the parent of its working folder `/app/work`) by a link to a host
    folder; the kept layer holds that link verbatim, and the diff's workspace made from the layer
    must not read the host's `<folder>/work` through it."""
    secret = Path("/tmp") / f"hrl-host-secret-{uuid.uuid4().hex}"
    (secret / "work").mkdir(parents=True)
    (secret / "work" / "id_rsa").write_text("HOST-SECRET")
    spec = spec_on(image_root, sb_base).model_copy(update={"mount_dir": "/app/work"})
    layer, ws = tmp_path / "layer", tmp_path / "workspace"
    try:
        async with await Sandbox.create(spec) as sb:
            res = await sb.exec(["sh", "-c", f"cd / && rm -rf /app && ln -s {secret} /app"])
            assert res.returncode == 0, res.stderr
            kept = await sb.destroy(keep_layer=layer)
        assert kept is not None and kept.truncated == ""
        assert os.readlink(layer / "app") == str(secret)  # the link is in the layer, never followed
        assert layer_workspace(layer, spec, ws) is None
    finally:
        shutil.rmtree(secret)
    assert ws.is_dir() and list(ws.iterdir()) == []


def test_the_diffs_workspace_is_reached_from_the_layer_without_following_links(tmp_path: Path) -> None:
    """A hostile kept layer (no sandbox needed): links at every component of the working folder's
    path are refused; a real folder is copied by `copy_untrusted`'s rules."""
    host = tmp_path / "host"
    (host / "work").mkdir(parents=True)
    (host / "work" / "id_rsa").write_text("HOST-SECRET")
    spec = SandboxSpec(mount_dir="/app/work")
    for n, plant in enumerate(["app", "app/work"]):
        layer = tmp_path / f"layer{n}"
        (layer / plant).parent.mkdir(parents=True, exist_ok=True)
        (layer / plant).symlink_to(host if plant == "app" else host / "work")
        assert layer_workspace(layer, spec, tmp_path / f"ws{n}") is None
        assert list((tmp_path / f"ws{n}").iterdir()) == []
    layer = tmp_path / "layer-ok"
    (layer / "app" / "work").mkdir(parents=True)
    (layer / "app" / "work" / "a.txt").write_text("mine")
    (layer / "app" / "work" / "out").symlink_to(host / "work" / "id_rsa")
    report = layer_workspace(layer, spec, tmp_path / "ws-ok")
    assert report is not None and report.files == 2 and report.skipped_count == 1
    assert sorted(p.name for p in (tmp_path / "ws-ok").iterdir()) == ["a.txt"]
    assert (tmp_path / "ws-ok" / "a.txt").read_text() == "mine"
