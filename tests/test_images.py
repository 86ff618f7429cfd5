"""Images as the sandbox's root (issue 32.3): the base image made from Debian packages, a Dockerfile
FROM it built and unpacked once (cached by digest), a sandbox on that root, and the writable layer
carried to a fresh sandbox of the same image. Attacks on it: tests/test_security_images.py."""

from __future__ import annotations

import asyncio
import shutil
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harnessrl.images import ImageRoot, ImageSpec, provide_image, resolve_image
from harnessrl.images.base import BASE_REF
from harnessrl.images.spec import build_tag, task_image_spec
from harnessrl.images.store import ContainerStore, missing_tools
from harnessrl.sandbox import Sandbox, SandboxPool, SandboxSpec
from harnessrl.sandbox.fscopy import copy_untrusted
from harnessrl.types import ImageError

IMAGES = Path(__file__).resolve().parent / "fixtures" / "images"
pytestmark = pytest.mark.usefixtures("sandbox_agent")  # every sandbox behaviour with both agents


def spec_on(root: ImageRoot, base: Path, **kw: object) -> SandboxSpec:
    return SandboxSpec(image_root=root.path, extra_env=root.env, mount_dir=root.workdir, base_dir=base, **kw)  # type: ignore[arg-type]


async def test_base_and_task_image_are_built_once_and_cached(image_root: ImageRoot) -> None:
    again = provide_image(ImageSpec(context=IMAGES / "apt-package" / "environment", task="apt-package"))
    assert (again.base_s, again.build_s, again.unpack_s) == (0.0, 0.0, 0.0)
    assert again.root == image_root
    assert image_root.path.name == image_root.digest.removeprefix("sha256:")
    assert image_root.env["GREETING"] == "from-the-image" and image_root.workdir == "/app"
    assert ContainerStore().image_id(BASE_REF) is not None
    assert (image_root.path / "usr/bin/hello").is_file() and (image_root.path / "usr/bin/python3").exists()
    assert image_root.path.parent.stat().st_mode & 0o777 == 0o700  # its setuid programs are root's alone


async def test_sandbox_on_the_image_runs_its_package(image_root: ImageRoot, sb_base: Path) -> None:
    assert shutil.which("hello") is None, "the host must lack the package the image installs"
    script = (
        'hello; echo "$GREETING"; pwd; cat built.txt; id -un; . /etc/os-release; echo "$VERSION_CODENAME"'
    )
    async with await Sandbox.create(spec_on(image_root, sb_base)) as sb:
        res = await sb.exec(["sh", "-c", script])
        assert sb.host_workspace == sb.root / "merged" / "app"
    assert (res.returncode, res.stderr) == (0, "")
    assert res.stdout == "Hello, world!\nfrom-the-image\n/app\nmade at build time\nagent\nbookworm\n"


async def test_image_sandbox_reaches_the_model_endpoint_only(image_root: ImageRoot, sb_base: Path) -> None:
    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nmodel")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    other = await asyncio.start_server(lambda r, w: w.close(), "127.0.0.1", 0)
    other_port = other.sockets[0].getsockname()[1]
    probe = (
        "import socket, urllib.request\n"
        "print(urllib.request.urlopen('http://127.0.0.1:18080/', timeout=10).read().decode())\n"
        f"for target in [('127.0.0.1', {other_port}), ('1.1.1.1', 53)]:\n"
        "    try:\n"
        "        socket.create_connection(target, timeout=2); print('connected')\n"
        "    except OSError as e:\n"
        "        print('tcp-fail', type(e).__name__)\n"
    )
    spec = spec_on(image_root, sb_base, endpoint=("127.0.0.1", port))
    async with server, other, await Sandbox.create(spec) as sb:
        res = await sb.exec(["python3", "-c", probe], timeout_s=30)
    assert res.stdout == "model\ntcp-fail ConnectionRefusedError\ntcp-fail OSError\n", res.stderr


async def test_writable_layer_carries_to_a_fresh_sandbox_of_the_image(
    image_root: ImageRoot, sb_base: Path, tmp_path: Path
) -> None:
    changes = (
        "echo solved > /app/answer.txt; mkdir -p /opt/tool && echo v2 > /opt/tool/version; "
        "rm /app/built.txt; rm -r /usr/share/doc-base 2>/dev/null; rm /usr/bin/hello; "
        "ln -s /etc/os-release /app/release-link; mkfifo /app/fifo; chmod 700 /opt/tool"
    )
    layer = tmp_path / "layer"
    async with await Sandbox.create(spec_on(image_root, sb_base)) as sb:
        assert (await sb.exec(["sh", "-c", changes])).returncode == 0
        report = await sb.destroy(keep_layer=layer)
    assert report is not None and report.truncated == ""
    assert report.skipped == ["app/fifo: not a regular file, folder or link"]
    assert (layer / "app/release-link").is_symlink() and not (layer / "app/fifo").exists()
    check = (
        "cat /app/answer.txt /opt/tool/version; ls /app; readlink /app/release-link; "
        "stat -c %a /opt/tool; command -v hello || echo no-hello; id -un"
    )
    verifier = spec_on(image_root, sb_base, layers=(layer,))
    async with await Sandbox.create(verifier) as sb:
        res = await sb.exec(["sh", "-c", check])
        await sb.exec(["sh", "-c", "echo overwritten > /app/answer.txt"])
    assert res.stdout == "solved\nv2\nanswer.txt\nrelease-link\n/etc/os-release\n700\nno-hello\nagent\n", (
        res.stderr
    )
    assert (layer / "app/answer.txt").read_text() == "solved\n"  # the verifier's writes stay in its sandbox
    assert (image_root.path / "app/built.txt").read_text() == "made at build time\n"


async def test_layer_copy_stops_at_its_caps(image_root: ImageRoot, sb_base: Path, tmp_path: Path) -> None:
    """The layer fits the tmpfs, but a hard link is data once there and once per name in a copy; the
    tmpfs counts names against its inodes, so the file cap is shown on a copy with a lower one."""
    spec = spec_on(image_root, sb_base, disk_mb=64)
    links = "import os\nfor i in range({n}): os.link('/f', f'/l{{i}}')\n"
    async with await Sandbox.create(spec) as sb:
        await sb.exec(["sh", "-c", f'head -c 30000000 /dev/zero > /f && python3 -c "{links.format(n=2)}"'])
        report = await sb.destroy(keep_layer=tmp_path / "big")
    assert report is not None and report.truncated == f"more than {64 * 2**20} bytes of data"
    async with await Sandbox.create(spec) as sb:
        await sb.exec(["sh", "-c", f'touch /f && python3 -c "{links.format(n=300)}"'])
        report = await sb.destroy(keep_layer=tmp_path / "many")
    assert report is not None and report.truncated == "" and report.files > 300
    again = copy_untrusted(
        tmp_path / "many", tmp_path / "fewer", max_files=250, max_bytes=1 << 20, layer=True
    )
    assert again.truncated == "more than 250 files"


async def test_pooled_image_sandboxes_take_the_task_files(
    image_root: ImageRoot, sb_base: Path, tmp_path: Path
) -> None:
    (tmp_path / "task").mkdir()
    (tmp_path / "task" / "input.txt").write_text("from the task")
    async with SandboxPool(spec_on(image_root, sb_base), size=2) as pool:
        sbs = [await pool.acquire() for _ in range(2)]
        await sbs[0].load_workspace(tmp_path / "task")
        outs = [await sb.exec(["sh", "-c", "hello; ls; cat input.txt >> built.txt"]) for sb in sbs]
        for sb in sbs:
            await sb.destroy()
    assert [o.stdout for o in outs] == ["Hello, world!\nbuilt.txt\ninput.txt\n", "Hello, world!\nbuilt.txt\n"]
    assert outs[0].stderr == "" and "No such file" in outs[1].stderr


@pytest.mark.harness
async def test_a_harness_cli_from_the_cache_runs_on_the_image(image_root: ImageRoot, sb_base: Path) -> None:
    from harnessrl.harnesses import get_harness, harness_binds

    harness = get_harness("claude-code")
    if not harness.is_installed():
        pytest.skip("Claude Code is not installed in the harness cache (scripts/install_harnesses)")
    claude = harness.install_dir() / "node_modules/.bin/claude"
    async with await Sandbox.create(spec_on(image_root, sb_base, ro_binds=harness_binds())) as sb:
        res = await sb.exec([str(claude), "--version"], timeout_s=60)
    assert res.returncode == 0 and res.stdout.endswith("(Claude Code)\n"), res.stderr


def test_a_missing_image_fails_fast_with_one_line() -> None:
    spec = task_image_spec(IMAGES / "missing-image")
    assert spec.name == "registry.invalid/harnessrl/no-such-image:1"
    if missing_tools(["podman"]):
        pytest.skip("needs podman: scripts/setup installs it as root")
    started = time.monotonic()
    with pytest.raises(ImageError) as caught:
        resolve_image(spec)
    message = str(caught.value)
    assert time.monotonic() - started < 60
    assert "\n" not in message
    assert message.startswith(
        f"task {IMAGES / 'missing-image'}: image 'registry.invalid/harnessrl/no-such-image:1'"
    )
    assert f"`harnessrl env build {IMAGES / 'missing-image'}`" in message and "podman pull" in message


def test_an_unbuilt_dockerfile_is_named_when_building_is_off(tmp_path: Path) -> None:
    context = tmp_path / "t" / "environment"
    context.mkdir(parents=True)
    (context / "Dockerfile").write_text(f"FROM {BASE_REF}\nRUN echo {time.time_ns()}\n")
    if missing_tools(["podman"]):
        pytest.skip("needs podman: scripts/setup installs it as root")
    with pytest.raises(
        ImageError, match=r"^task t: image of .*/Dockerfile is not built: run `harnessrl env build t`$"
    ):
        resolve_image(ImageSpec(context=context, task="t"), build=False)


def test_a_failing_dockerfile_names_its_step(image_root: ImageRoot) -> None:
    spec = task_image_spec(IMAGES / "broken-build")
    with pytest.raises(ImageError) as caught:
        resolve_image(spec)
    message = str(caught.value)
    assert "\n" not in message
    assert 'failed at step `RUN echo "step three fails" && exit 7` (exit status 7): ' in message
    assert "step three fails (log: " in message and "never reached" not in message
    assert ContainerStore().image_id(build_tag(spec)) is None


def test_build_tag_follows_the_context(tmp_path: Path) -> None:
    context = tmp_path / "my task" / "environment"
    context.mkdir(parents=True)
    (context / "Dockerfile").write_text("FROM scratch\n")
    first = build_tag(ImageSpec(context=context))
    assert first.startswith("localhost/harnessrl-env/my-task:") and first == build_tag(
        ImageSpec(context=context)
    )
    (context / "data.txt").write_text("x")
    assert build_tag(ImageSpec(context=context)) != first
    assert len(first.rsplit(":", 1)[1]) == 20


def test_env_build_command_prints_digest_time_and_size(image_root: ImageRoot) -> None:
    from harnessrl.cli import app

    result = CliRunner().invoke(app, ["env", "build", str(IMAGES / "apt-package")])
    assert result.exit_code == 0, result.output
    first, second = result.output.splitlines()
    assert first == f"{IMAGES / 'apt-package'}: {image_root.digest} ({image_root.ref}) -> {image_root.path}"
    assert second == f"  base image 0.0 s, build/pull 0.0 s, unpack 0.0 s, {image_root.bytes / 2**20:.0f} MiB"
