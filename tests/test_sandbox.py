"""Sandbox isolation and lifecycle: each security promise of issue 4 is one test, on real processes."""

from __future__ import annotations

import asyncio
import errno
import gc
import hashlib
import json
import logging
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from harnessrl.sandbox import Sandbox, SandboxSpec, cgroups
from harnessrl.sandbox.bwrap import agent_python, bwrap_path
from harnessrl.sandbox.folders import sweep_stale
from harnessrl.sandbox.outputs import read_output_fd
from harnessrl.sandbox.spec import ExecResult
from harnessrl.types import SandboxError

pytestmark = [
    pytest.mark.skipif(bwrap_path() is None, reason="bubblewrap is not installed"),
    pytest.mark.usefixtures("sandbox_agent"),  # every behaviour with both agents
]


def procs_with(marker: str) -> list[int]:
    """Host pids whose command line starts with `marker` (scanning /proc: no pgrep dependency)."""
    pids = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{name}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if cmdline.startswith(marker):
            pids.append(int(name))
    return pids


async def wait_gone(marker: str, timeout_s: float = 60.0) -> list[int]:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while (left := procs_with(marker)) and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.05)
    return left


async def test_exec_runs_in_workspace_with_private_home(sb_base: Path, tmp_path: Path) -> None:
    async with await Sandbox.create(SandboxSpec(base_dir=sb_base)) as sb:
        (sb.host_workspace / "in.txt").write_text("from host")
        res = await sb.exec(["sh", "-c", 'pwd; echo "$HOME"; cat in.txt; printf out > made.txt'])
        assert (res.returncode, res.timed_out, res.error) == (0, False, "")
        assert res.stdout == "/workspace\n/home/agent\nfrom host"
        assert (sb.host_workspace / "made.txt").read_text() == "out"
        missing = await sb.exec(["no-such-binary-xyz"])
        assert missing.returncode == 127
        assert "No such file or directory" in missing.error


async def test_reward_dir_next_to_workspace_is_unreadable(sb_base: Path, tmp_path: Path) -> None:
    task = tmp_path / "task"
    (task / "workspace").mkdir(parents=True)
    (task / "reward").mkdir()
    (task / "reward" / "check.py").write_text("SECRET-ANSWER")
    (task / "workspace" / "data.txt").write_text("visible")
    spec = SandboxSpec(workspace=task / "workspace", mount_dir="/root/.openclaw/workspace", base_dir=sb_base)
    async with await Sandbox.create(spec) as sb:
        script = f"cat data.txt; cat ../reward/check.py; cat {task}/reward/check.py; ls /root/.openclaw"
        res = await sb.exec(["sh", "-c", script])
    assert res.stdout == "visibleworkspace\n"
    assert "SECRET-ANSWER" not in res.stdout + res.stderr
    assert res.stderr.count("No such file or directory") == 2


async def test_no_network_outbound_tcp_and_dns_fail(sb_base: Path, tmp_path: Path) -> None:
    server = await asyncio.start_server(lambda r, w: w.close(), "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    probe = (
        "import socket\n"
        f"for target in [('127.0.0.1', {port}), ('1.1.1.1', 53)]:\n"
        "    try:\n"
        "        socket.create_connection(target, timeout=2); print('connected', target[1])\n"
        "    except OSError as e:\n"
        "        print('tcp-fail', type(e).__name__)\n"
        "try:\n"
        "    socket.getaddrinfo('example.com', 80); print('resolved')\n"
        "except OSError as e:\n"
        "    print('dns-fail', type(e).__name__)\n"
    )
    async with server, await Sandbox.create(SandboxSpec(base_dir=sb_base)) as sb:
        res = await sb.exec(["python3", "-c", probe], timeout_s=20)
    assert res.stdout == "tcp-fail ConnectionRefusedError\ntcp-fail OSError\ndns-fail gaierror\n", res.stderr


async def test_cannot_see_other_sandbox_or_host_home(sb_base: Path, tmp_path: Path) -> None:
    async with (
        await Sandbox.create(SandboxSpec(base_dir=sb_base)) as a,
        await Sandbox.create(SandboxSpec(base_dir=sb_base)) as b,
    ):
        (a.host_workspace / "mine.txt").write_text("A-SECRET")
        res = await b.exec(
            ["sh", "-c", f"cat {a.host_workspace}/mine.txt; ls {tmp_path}; ls /root; ls /work"]
        )
        own = await b.exec(["ls", "-A", "/workspace"])
    assert "A-SECRET" not in res.stdout
    assert res.stdout == ""
    assert res.stderr.count("No such file or directory") == 4
    assert own.stdout == ""


async def test_daemonised_child_does_not_outlive_its_command(sb_base: Path, tmp_path: Path) -> None:
    async with await Sandbox.create(SandboxSpec(base_dir=sb_base)) as sb:
        res = await sb.exec(["sh", "-c", "setsid sleep 987651 </dev/null >/dev/null 2>&1 & echo started"])
        assert res.stdout == "started\n"
        assert await wait_gone("sleep 987651") == []


async def test_destroy_kills_everything_while_running(sb_base: Path, tmp_path: Path) -> None:
    sb = await Sandbox.create(SandboxSpec(base_dir=sb_base))
    task = asyncio.create_task(sb.exec(["sh", "-c", "(setsid sleep 987652 &); sleep 987653"]))
    for _ in range(1200):  # up to a minute on a loaded machine
        if len(procs_with("sleep 98765")) == 2:
            break
        await asyncio.sleep(0.05)
    assert len(procs_with("sleep 98765")) == 2
    await sb.destroy()
    with pytest.raises(SandboxError):
        await task
    assert await wait_gone("sleep 98765") == []
    assert not sb.root.exists()


async def test_timeout_terms_then_kills_the_group(sb_base: Path, tmp_path: Path) -> None:
    async with await Sandbox.create(SandboxSpec(base_dir=sb_base)) as sb:
        soft = await sb.exec(["sh", "-c", "sleep 987654 & sleep 987655"], timeout_s=0.3, grace_s=1.0)
        assert (soft.returncode, soft.timed_out) == (-15, True)
        hard = await sb.exec(["sh", "-c", "trap '' TERM; sleep 987656"], timeout_s=0.3, grace_s=0.3)
        assert (hard.returncode, hard.timed_out) == (-9, True)
        assert 0.6 <= hard.duration_s < 3.0
        assert await wait_gone("sleep 98765") == []
        again = await sb.exec(["echo", "still usable"])
        assert again.stdout == "still usable\n"


async def test_memory_limit_applies(sb_base: Path, tmp_path: Path) -> None:
    async with await Sandbox.create(SandboxSpec(base_dir=sb_base, memory_mb=64)) as sb:
        res = await sb.exec(["python3", "-c", "x = bytearray(256 * 1024 * 1024)"])
        lifted = await sb.exec(
            ["python3", "-c", "x = bytearray(256 * 1024 * 1024)"], rlimits={"RLIMIT_DATA": None}
        )
    assert res.returncode == 1
    assert "MemoryError" in res.stderr
    if cgroups.layout()[0] == "none":  # only the per-process limit exists here
        assert (lifted.returncode, lifted.stderr) == (0, "")
    else:  # the sandbox's memory cgroup still holds with the rlimit lifted: the OOM killer ends it
        assert lifted.returncode == -9


async def test_file_size_limit_applies(sb_base: Path, tmp_path: Path) -> None:
    async with await Sandbox.create(SandboxSpec(base_dir=sb_base, max_file_mb=1)) as sb:
        res = await sb.exec(["sh", "-c", "head -c 3000000 /dev/zero > big.bin"])
        size = (sb.host_workspace / "big.bin").stat().st_size
    assert res.returncode != 0
    assert size == 1024 * 1024


def test_read_output_cuts_the_middle_of_long_streams() -> None:
    fd = os.memfd_create("out")
    os.write(fd, b"H" * (1 << 20) + b"M" * 5000 + b"T" * (1 << 20))
    text = read_output_fd(fd, limit=(2 << 20) + 100)
    assert text == "H" * (1 << 20) + "\n[... 4900 bytes cut by harnessrl ...]\n" + "M" * 100 + "T" * (1 << 20)
    os.close(fd)


DIE_WITH_PARENT = """
import asyncio, sys
from harnessrl.sandbox import Sandbox, SandboxSpec
async def main():
    sb = await Sandbox.create(SandboxSpec(base_dir=sys.argv[1]))
    print("ready", flush=True)
    await sb.exec(["sleep", "987660"])
asyncio.run(main())
"""


async def test_sandbox_dies_with_its_host_process(sb_base: Path) -> None:
    host = await asyncio.create_subprocess_exec(
        sys.executable, "-c", DIE_WITH_PARENT, str(sb_base), stdout=asyncio.subprocess.PIPE
    )
    assert host.stdout is not None
    assert await asyncio.wait_for(host.stdout.readline(), 30) == b"ready\n"
    for _ in range(1200):  # up to a minute on a loaded machine
        if procs_with("sleep 987660"):
            break
        await asyncio.sleep(0.05)
    assert len(procs_with("sleep 987660")) == 1
    host.kill()  # SIGKILL: no finaliser, no destroy(); only --die-with-parent and the pid namespace
    await host.wait()
    assert await wait_gone("sleep 987660") == []
    # Its folder stays behind until a later process sweeps it.
    (stale,) = sb_base.glob("hrl-sb-*")
    assert os.path.ismount(stale) == (os.geteuid() == 0)  # its tmpfs, mounted by the host, stays too
    (sb_base / "hrl-sb-mine").mkdir()
    (sb_base / "hrl-sb-mine" / "owner").write_text(str(os.getpid()))
    assert sweep_stale(sb_base) == 1
    assert [p.name for p in sb_base.glob("hrl-sb-*")] == ["hrl-sb-mine"]
    assert not os.path.ismount(stale)


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("unshare") is None, reason="needs root and unshare")
async def test_a_sandbox_whose_mount_namespace_ended_is_swept(sb_base: Path) -> None:
    """A host process in a mount namespace of its own (`ip netns exec` makes one: the two-node Ray
    test) mounts its sandbox's tmpfs there; killed, the namespace ends and the tmpfs with its owner
    file goes with it. The folder under it must still say whose it was, or no sweep removes it (two
    empty folders piled up per test run)."""
    host = await asyncio.create_subprocess_exec(
        "unshare", "--mount", "--propagation", "private", sys.executable, "-c", DIE_WITH_PARENT,
        str(sb_base), stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert host.stdout is not None
    assert await asyncio.wait_for(host.stdout.readline(), 30) == b"ready\n"
    host.kill()
    await host.wait()
    assert await wait_gone("sleep 987660") == []
    (stale,) = sb_base.glob("hrl-sb-*")
    assert not os.path.ismount(stale)  # its tmpfs was in the namespace that ended
    assert (stale / "owner").read_text() == str(host.pid)
    assert sweep_stale(sb_base) == 1
    assert list(sb_base.glob("hrl-sb-*")) == []


async def test_a_sandbox_that_cannot_say_whose_it_is_leaves_no_folder(
    sb_base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The owner file is written first of all (a full base folder fails it): the folder must go with
    the error, or it stays without an owner, which no sweep removes."""
    real_write = os.write

    def full(fd: int, data: Any) -> int:
        if os.readlink(f"/proc/self/fd/{fd}").endswith("/owner"):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", full)
    with pytest.raises(SandboxError, match="No space left on device"):
        await Sandbox.create(SandboxSpec(base_dir=sb_base))
    monkeypatch.undo()
    assert list(sb_base.glob("hrl-sb-*")) == []


def test_a_sweep_racing_another_sweep_raises_nothing(sb_base: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ray workers that start together all sweep the same base: a stale staging folder that another
    sweep removes between the glob and the listing is no error (it failed a rollout's sandbox)."""
    from harnessrl.sandbox import folders

    dead = sb_base / "hrl-stage-999999999"
    dead.mkdir()
    (dead / "owner").write_text("999999999")
    (dead / "0123456789abcdef").mkdir()
    alive = folders._owner_alive

    def owner_alive_then_gone(folder: Path) -> bool | None:
        state = alive(folder)
        if folder == dead:  # the other process's sweep wins the race right here
            (dead / "0123456789abcdef").rmdir()
            (dead / "owner").unlink()
            dead.rmdir()
        return state

    monkeypatch.setattr(folders, "_owner_alive", owner_alive_then_gone)
    assert sweep_stale(sb_base) == 0
    assert not dead.exists()
    monkeypatch.setattr(folders, "sweep_stale", lambda base: (_ for _ in ()).throw(OSError("boom")))
    folders.sweep_once(sb_base / "never-swept")  # logged, not raised


async def test_unusable_base_dir_raises_sandbox_error(sb_base: Path) -> None:
    (sb_base / "file").write_text("not a folder")
    with pytest.raises(SandboxError, match="sandbox folder under"):
        await Sandbox.create(SandboxSpec(base_dir=sb_base / "file" / "sub"))


async def test_bad_bind_raises_sandbox_error_and_cleans_up(sb_base: Path, tmp_path: Path) -> None:
    spec = SandboxSpec(base_dir=sb_base, ro_binds=(tmp_path / "does-not-exist",))
    with pytest.raises(SandboxError, match="does-not-exist"):
        await Sandbox.create(spec)
    assert list(sb_base.glob("hrl-sb-*")) == []


async def test_endpoint_forwarder_carries_http_to_host_server(sb_base: Path, tmp_path: Path) -> None:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        line = head.split(b"\r\n")[0]
        body = b"you sent " + line
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(body), body)
        )
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    client = (
        "import urllib.request as u; print(u.urlopen('http://127.0.0.1:18080/v1/models?x=1').read().decode())"
    )
    spec = SandboxSpec(base_dir=sb_base, endpoint=("127.0.0.1", port))
    async with server, await Sandbox.create(spec) as sb:
        assert sb.endpoint_url == "http://127.0.0.1:18080"
        res = await sb.exec(["python3", "-c", client], timeout_s=20)
        assert sb.forwarder is not None and sb.forwarder.connections == 1
    assert res.stdout == "you sent GET /v1/models?x=1 HTTP/1.1\n", res.stderr


async def test_finaliser_tears_down_a_dropped_sandbox(sb_base: Path, tmp_path: Path) -> None:
    sb = await Sandbox.create(SandboxSpec(base_dir=sb_base))
    root, proc = sb.root, sb._proc
    assert proc is not None
    del sb
    gc.collect()
    assert await asyncio.wait_for(proc.wait(), 60) == -9
    assert not root.exists()


async def test_local_backend_warns_every_time(
    sb_base: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    for _ in range(2):
        async with await Sandbox.create(SandboxSpec(backend="local", base_dir=sb_base)) as sb:
            res = await sb.exec(["sh", "-c", "pwd"])
            assert res.stdout == f"{sb.host_workspace}\n"
    warnings = [r for r in caplog.records if "NO ISOLATION" in r.getMessage()]
    assert len(warnings) == 2
    assert sys.platform == "linux"


PARALLEL_CLIENT = """
import hashlib, http.client, sys, threading
results = {}
def get(i):
    c = http.client.HTTPConnection("127.0.0.1", 18080, timeout=30)
    c.request("GET", f"/blob/{i}")
    results[i] = hashlib.sha256(c.getresponse().read()).hexdigest()
threads = [threading.Thread(target=get, args=(i,)) for i in range(16)]
for t in threads: t.start()
for t in threads: t.join()
print(" ".join(results[i] for i in range(16)))
"""

STREAM_CLIENT = """
import http.client, json, time
c = http.client.HTTPConnection("127.0.0.1", 18080, timeout=30)
t = time.monotonic()
c.request("GET", "/stream")
r = c.getresponse()
first = r.fp.readline().decode()
t_first = time.monotonic() - t
rest = r.read().decode()
print(json.dumps([first, rest, t_first, time.monotonic() - t]))
"""


def blob(i: int) -> bytes:
    return bytes([i]) * (256 * 1024 + i)


async def bridge_server() -> asyncio.Server:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        path = (await reader.readuntil(b"\r\n\r\n")).split(b" ")[1].decode()
        if path == "/stream":  # two SSE events 1.5 s apart, no Content-Length: ends at close
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n")
            writer.write(b"data: one\n\n")
            await writer.drain()
            await asyncio.sleep(1.5)
            writer.write(b"data: two\n\n")
        else:
            body = blob(int(path.rsplit("/", 1)[1]))
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
        await writer.drain()
        writer.close()

    return await asyncio.start_server(handle, "127.0.0.1", 0)


async def through_bridge(sb_base: Path, client: str) -> tuple[ExecResult, int]:
    """Run the python `client` in a sandbox whose model endpoint is `bridge_server`: (its result, the
    connections the sandbox's forwarder carried)."""
    server = await bridge_server()
    port = server.sockets[0].getsockname()[1]
    async with (
        server,
        await Sandbox.create(SandboxSpec(base_dir=sb_base, endpoint=("127.0.0.1", port))) as sb,
    ):
        res = await sb.exec(["python3", "-c", client], timeout_s=60)
        assert sb.forwarder is not None
        return res, sb.forwarder.connections


async def test_bridge_carries_parallel_connections_intact(sb_base: Path, tmp_path: Path) -> None:
    res, connections = await through_bridge(sb_base, PARALLEL_CLIENT)
    assert connections == 16
    assert res.stdout.split() == [hashlib.sha256(blob(i)).hexdigest() for i in range(16)], res.stderr


async def test_bridge_streams_without_buffering(sb_base: Path, tmp_path: Path) -> None:
    res, _ = await through_bridge(sb_base, STREAM_CLIENT)
    first, rest, t_first, t_all = json.loads(res.stdout)
    assert (first, rest) == ("data: one\n", "\ndata: two\n\n"), res.stderr
    assert t_first < 1.0  # the first event arrived while the server was still holding the second
    assert t_all >= 1.4


async def test_agent_runs_compiled_once_and_falls_back_to_its_source(sb_base: Path, tmp_path: Path) -> None:
    import harnessrl.sandbox.folders as sbmod

    python = agent_python()[0]
    pyc = sbmod.compiled_agent(python, tmp_path)
    assert pyc.suffix == ".pyc" and pyc.parent == tmp_path
    assert sbmod.compiled_agent(python, tmp_path) is pyc  # cached: no second compile
    assert sorted(p.name for p in tmp_path.iterdir()) == [".build.lock", pyc.name]  # no temp file left
    async with await Sandbox.create(SandboxSpec(base_dir=sb_base / "sb", agent="python")) as sb:
        assert (await sb.exec(["true"])).returncode == 0
        assert sb._proc is not None
        cmdline = Path(f"/proc/{sb._proc.pid}/cmdline").read_bytes().split(b"\0")
        assert str(sbmod.compiled_agent(python)).encode() in cmdline  # the default cache's .pyc runs

    # An interpreter that cannot compile: the agent runs from its source instead.
    assert sbmod.compiled_agent("/no/such/python", tmp_path / "other") == sbmod.AGENT_FILE
    # A cached file owned by someone else is never run.
    if os.getuid() == 0:
        third = tmp_path / "third"
        third.mkdir()
        planted = sbmod.compiled_agent(python, third)
        sbmod._compiled.clear()
        os.chown(planted, 12345, 12345)
        assert sbmod.compiled_agent(python, third) == sbmod.AGENT_FILE


async def test_requests_carry_any_string_exactly_and_refuse_what_no_exec_takes(sb_base: Path) -> None:
    """The request encoding (NUL-separated fields) round-trips arbitrary argv and env, with each agent:
    bytes that are not UTF-8, "=" inside values, newlines, an empty argument."""
    odd = "a\udcff b"  # os.fsdecode(b"a\xff b")
    script = '[ "$1" = "$(printf "a\\377 b")" ] && [ -z "$2" ] && printf "%s|%s|%s" "$X" "$3" "$#"'
    async with await Sandbox.create(SandboxSpec(base_dir=sb_base)) as sb:
        res = await sb.exec(["sh", "-c", script, "sh", odd, "", "two\nlines"], env={"X": "k=v=w"})
        assert (res.returncode, res.stdout) == (0, "k=v=w|two\nlines|3"), res
        for argv, env, why in [
            (["echo", "nul\0byte"], {}, "embedded null byte"),
            (["true"], {"BAD=NAME": "1"}, "illegal environment variable name"),
            (["true"], {"": "1"}, "illegal environment variable name"),
            ([], {}, "empty argv"),
        ]:
            bad = await sb.exec(argv, env=env)
            assert (bad.returncode, why in bad.error) == (127, True), bad
        bad = await sb.exec(["true"], rlimits={"RLIMIT_NOPE": 1})
        assert "unknown resource limit" in bad.error
        assert (await sb.exec(["true"])).returncode == 0  # nothing was sent: the agent is fine


def test_request_encoding_round_trips_through_the_python_agents_parser() -> None:
    import importlib.util
    import resource

    from harnessrl.sandbox.folders import AGENT_FILE
    from harnessrl.sandbox.protocol import encode_request

    spec = importlib.util.spec_from_file_location("hrl_agent_under_test", AGENT_FILE)
    assert spec is not None and spec.loader is not None
    agent = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(agent)
    frame = encode_request(
        7, ["x", "a\udcff", ""], {"A": "1=2", "B": ""}, "/w s", 1.5, 2.0, {"RLIMIT_NPROC": 64}, 3
    )
    assert int.from_bytes(frame[:4], "big") == len(frame) - 4
    assert agent.parse_request(frame[4:]) == {
        "id": 7, "cwd": "/w s", "timeout_s": 1.5, "grace_s": 2.0, "nfds": 3,
        "argv": ["x", "a\udcff", ""], "env": {"A": "1=2", "B": ""},
        "rlimits": [(resource.RLIMIT_NPROC, 64)],
    }  # fmt: skip
    untimed = encode_request(8, ["true"], {}, "/", None, 2.0, {}, 2)
    assert agent.parse_request(untimed[4:])["timeout_s"] is None


def test_native_agent_is_built_once_and_a_planted_file_is_never_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shutil
    import subprocess

    from harnessrl.sandbox import folders

    if folders.native_agent() is None:
        pytest.skip("no C compiler: the native agent cannot be built")
    built = folders.native_agent(tmp_path)
    assert built is not None and built.suffix == ".bin" and built.parent == tmp_path
    assert folders.native_agent(tmp_path) is built  # cached: no second build
    assert sorted(p.name for p in tmp_path.iterdir()) == [".build.lock", built.name]  # no temp file left
    assert built.stat().st_mode & 0o777 == 0o755
    # Compiles without a warning (the build itself does not use -Werror: another compiler may warn).
    cc = shutil.which("cc") or "gcc"
    flags = ["-std=gnu11", "-Wall", "-Wextra", "-Wshadow", "-Werror", "-fsyntax-only"]
    warn = subprocess.run([cc, *flags, str(folders.NATIVE_SOURCE)], capture_output=True, text=True)
    assert warn.returncode == 0, warn.stderr
    # A file in its place that is a link, or that another uid could have written, is never run.
    for i, plant in enumerate([lambda p: p.symlink_to(built), lambda p: shutil.copy(built, p)]):
        other = tmp_path / f"other{i}"
        other.mkdir()
        plant(other / built.name)
        if i == 1:
            (other / built.name).chmod(0o777)
        assert folders.native_agent(other) is None
    # No compiler at all: None (and the sandbox falls back, below).
    monkeypatch.setenv("PATH", str(tmp_path / "nothing-here"))
    assert folders.native_agent(tmp_path / "no-cc") is None


def test_concurrent_first_builds_share_one_agent(tmp_path: Path) -> None:
    """Sandboxes are created in threads: four first builds at once on a fresh folder used to write
    one temporary file together, and the losers fell back to the slow agent for good (or ran a file
    still being written: "Text file busy")."""
    import concurrent.futures

    from harnessrl.sandbox import folders

    if folders.native_agent() is None:
        pytest.skip("no C compiler: the native agent cannot be built")
    python = agent_python()[0]
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        bins = list(pool.map(lambda _: folders.native_agent(tmp_path / "n"), range(4)))
        folders._native.clear()  # each call builds or checks again, not from the cache
        bins += list(pool.map(lambda _: folders.native_agent(tmp_path / "n"), range(4)))
        pycs = list(pool.map(lambda _: folders.compiled_agent(python, tmp_path / "p"), range(4)))
    assert bins[0] is not None and set(bins) == {bins[0]}
    assert pycs[0].suffix == ".pyc" and set(pycs) == {pycs[0]}
    assert sorted(p.name for p in (tmp_path / "n").iterdir()) == [".build.lock", bins[0].name]


async def test_without_the_native_agent_auto_falls_back_and_native_refuses(
    sb_base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harnessrl.sandbox import folders

    monkeypatch.delenv("HARNESSRL_SANDBOX_AGENT", raising=False)
    monkeypatch.setattr(folders, "native_agent", lambda: None)
    async with await Sandbox.create(SandboxSpec(base_dir=sb_base)) as sb:
        assert sb.agent_file.suffix in (".pyc", ".py")
        assert (await sb.exec(["true"])).returncode == 0
    with pytest.raises(SandboxError, match="native sandbox agent is unavailable"):
        await Sandbox.create(SandboxSpec(base_dir=sb_base, agent="native"))
    monkeypatch.setenv("HARNESSRL_SANDBOX_AGENT", "rust")
    with pytest.raises(SandboxError, match="expected native, python or auto"):
        await Sandbox.create(SandboxSpec(base_dir=sb_base))


@pytest.mark.skipif(os.geteuid() != 0, reason="staging binds needs root")
def test_staged_binds_are_taken_down_when_the_process_exits(sb_base: Path, tmp_path: Path) -> None:
    """A bind that makes a 0700 folder reachable is for this process's sandboxes only: at exit it is
    unmounted and its staging folder removed (before, it stayed until another process's sweep)."""
    import subprocess

    secret = tmp_path / "private"
    secret.mkdir(mode=0o700)
    (secret / "file").write_text("x")
    code = (
        "import sys; from pathlib import Path; from harnessrl.sandbox import identity\n"
        "t = identity.staged(Path(sys.argv[1]), Path(sys.argv[2])); print(t, (t / 'file').read_text())"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(secret), str(sb_base)], capture_output=True, text=True, check=True
    ).stdout.split()
    staged_at = Path(out[0])
    assert out[1] == "x" and staged_at.parent.name.startswith("hrl-stage-")
    assert not staged_at.parent.exists()
    assert str(staged_at) not in Path("/proc/self/mounts").read_text()


def mount_options(target: Path) -> set[str]:
    """The per-mount options of the mount on `target` (/proc/self/mountinfo's sixth field)."""
    lines = [line.split() for line in Path("/proc/self/mountinfo").read_text().splitlines()]
    (options,) = [fields[5] for fields in lines if fields[4] == str(target)]
    return set(options.split(","))


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None, reason="root and setpriv")
async def test_a_setuid_file_does_not_work_through_a_staging_bind(sb_base: Path, tmp_path: Path) -> None:
    """Staging binds sit where every host uid can reach them: a setuid file in a staged folder (a
    sandbox's workspace, where its policy may make one) must not run as its owner for them. Before,
    a local user ran a sandbox's setuid copy of python through the stage path as the leased uid."""
    import subprocess

    from harnessrl.sandbox import identity

    secret = tmp_path / "private"
    secret.mkdir(mode=0o700)
    shutil.copy("/usr/bin/id", secret / "id")
    os.chown(secret / "id", 12345, 12345)
    (secret / "id").chmod(0o6755)
    nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    staged = identity.staged(secret, sb_base)
    ran = subprocess.run([*nobody, str(staged / "id"), "-u"], capture_output=True, text=True)
    assert (ran.stdout, ran.stderr) == ("65534\n", "")  # not 12345
    assert {"nosuid", "nodev", "rw"} <= mount_options(staged)
    async with await Sandbox.create(SandboxSpec(base_dir=sb_base, workspace=secret)) as sb:
        assert {"nosuid", "nodev", "rw"} <= mount_options(sb.root / "ws")  # the workspace's own bind
        assert (await sb.exec(["sh", "-c", "echo written > out"])).returncode == 0
    assert (secret / "out").read_text() == "written\n"


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None, reason="root and setpriv")
async def test_other_host_users_cannot_reach_a_sandbox_folder_without_a_tmpfs(sb_base: Path) -> None:
    """Without a tmpfs of its own (disk_mb None, or no CAP_SYS_ADMIN) a sandbox's HOME and /tmp are
    plain folders of its uid on the base's file system, which may honour setuid: a setuid copy the
    policy made in HOME ran as the leased uid for any local user. The sandbox folder now lets only
    its own uid through (root's, group = the leased uid, 0710)."""
    import subprocess

    async with await Sandbox.create(SandboxSpec(base_dir=sb_base, disk_mb=None)) as sb:
        plant = "cp /usr/bin/id ~/id && chmod 6755 ~/id && chmod 755 ~"
        assert (await sb.exec(["sh", "-c", plant])).returncode == 0
        nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"]
        # through a shell: setpriv itself still holds root's capabilities while it looks up its program
        ran = subprocess.run(
            [*nobody, "sh", "-c", f"exec {sb.host_home}/id -u"], capture_output=True, text=True
        )
        assert (ran.returncode, ran.stdout) == (126, ""), ran.stdout  # not the leased uid
        assert "Permission denied" in ran.stderr
        st = os.stat(sb.root)
        assert (oct(st.st_mode & 0o7777), st.st_uid, st.st_gid) == ("0o710", 0, sb.uid)


def binds_on(target: Path) -> int:
    """How many mounts are stacked on `target` in this mount namespace."""
    return sum(
        1 for line in Path("/proc/self/mountinfo").read_text().splitlines() if line.split()[4] == str(target)
    )


@pytest.mark.skipif(os.geteuid() != 0, reason="staging binds needs root")
def test_staging_from_several_threads_at_once_binds_each_source_once(sb_base: Path, tmp_path: Path) -> None:
    """Sandboxes are made in the event loop's thread while installs stage in others: first calls at
    once raced on the staging folder's mkdir (FileExistsError, a failed sandbox), and two calls for
    one source stacked two binds on one target."""
    import threading

    from harnessrl.sandbox import identity

    sources = [tmp_path / str(i) for i in range(3)]
    for source in sources:
        source.mkdir()
    for round_ in range(8):
        base = sb_base / f"b{round_}"
        base.mkdir(mode=0o711)
        base.chmod(0o711)
        gate = threading.Barrier(6)
        errors: list[str] = []
        targets: list[Path] = []

        def stage(
            source: Path,
            base: Path = base,
            gate: threading.Barrier = gate,
            errors: list[str] = errors,
            targets: list[Path] = targets,
        ) -> None:
            gate.wait()
            try:
                targets.append(identity.staged(source, base))
            except Exception as e:
                errors.append(f"{type(e).__name__}: {e}")

        threads = [threading.Thread(target=stage, args=(s,)) for s in [*sources, *sources]]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        try:
            assert errors == []
            assert sorted(binds_on(t) for t in set(targets)) == [1, 1, 1]
            assert (identity.stage_dir(base) / "owner").read_text() == str(os.getpid())
        finally:
            identity.unstage(base)
            identity.remove_stage(identity.stage_dir(base))


@pytest.mark.skipif(os.geteuid() != 0, reason="staging binds needs root")
def test_a_staging_folder_left_at_this_pid_or_swept_loses_every_stacked_bind(
    sb_base: Path, tmp_path: Path
) -> None:
    """A killed process's staging folder whose pid came back (containers: small pids) got a second
    bind stacked on its target, no owner file and no exit hook; the sweep then took one bind off per
    entry and unlinked the owner file anyway, leaving a live bind of the source in a folder no sweep
    looks at again. Now it is cleared before use, and a sweep takes every bind off, the owner last."""
    import hashlib

    from harnessrl.sandbox import identity

    source = tmp_path / "data"
    source.mkdir()
    (source / "secret").write_text("x")

    def leftover(folder: Path, owner: int) -> Path:  # what a dead process left: two binds stacked
        folder.mkdir(mode=0o711)
        (folder / "owner").write_text(str(owner))
        target = folder / hashlib.sha256(str(source).encode()).hexdigest()[:16]
        target.mkdir()
        identity.bind_mount(source, target)
        identity.bind_mount(source, target)
        return target

    target = leftover(identity.stage_dir(sb_base), os.getpid())
    try:
        assert identity.staged(source, sb_base) == target
        assert binds_on(target) == 1
        assert (target.parent / "owner").read_text() == str(os.getpid())
    finally:
        identity.unstage(sb_base)
    dead = leftover(sb_base / "hrl-stage-999999999", 999999999)
    sweep_stale(sb_base)
    try:
        assert (binds_on(dead), dead.parent.exists()) == (0, False)
    finally:
        for _ in range(4):  # never leave a bind behind, whatever failed
            identity.unmount(dead)
        identity.remove_stage(dead.parent)


def binds_of(source: Path) -> list[str]:
    """Where the host has `source` bound (its mount points, for a source on the root file system)."""
    lines = [line.split() for line in Path("/proc/self/mountinfo").read_text().splitlines()]
    return [fields[4] for fields in lines if fields[3] == str(source)]


@pytest.mark.skipif(os.geteuid() != 0, reason="staging binds needs root")
@pytest.mark.parametrize("disk_mb", [64, None], ids=["tmpfs", "no-tmpfs"])
async def test_a_ro_mount_staged_for_a_sandbox_goes_with_it(
    sb_base: Path, tmp_path: Path, disk_mb: int | None
) -> None:
    """`ro_mounts` are the per-verification folders (a checker's copy, Harbor's tests, /solution),
    a fresh temporary folder each: their staging binds stayed until the process exited, one host
    mount per verification (3,000 made each sandbox start 10x slower), each readable by any local
    user through the 0711 staging folder. Now one is the sandbox's own (in its tmpfs, or a hold on
    the process-wide bind without one) and goes with it, also when two sandboxes hold it."""
    if not tmp_path.is_relative_to("/tmp") or Path("/tmp").stat().st_dev != Path("/").stat().st_dev:
        pytest.skip("binds_of reads mount roots of the root file system")
    secret = tmp_path / "tests"
    secret.mkdir()
    (secret / "oracle").write_text("42")
    spec = SandboxSpec(base_dir=sb_base, disk_mb=disk_mb, ro_mounts=((secret, "/tests"),))
    first = await Sandbox.create(spec)
    second = await Sandbox.create(spec)
    try:
        assert (await first.exec(["cat", "/tests/oracle"])).stdout == "42"
        if disk_mb is not None:  # under the sandbox's own folder, which only its uid may pass
            assert sorted(binds_of(secret)) == sorted([str(first.root / "ro-0"), str(second.root / "ro-0")])
        await first.destroy()
        assert (await second.exec(["cat", "/tests/oracle"])).stdout == "42"
    finally:
        await first.destroy()
        await second.destroy()
    assert binds_of(secret) == []


def test_reachable_by_others_asks_x_of_folders_not_of_files(sb_base: Path) -> None:
    """A sandbox uid reaches a path when every folder down to it (the path too, if a folder) is o+x;
    a 0644 file under open folders is reachable (the sandbox agent's cached .pyc is bound directly,
    not staged), a 0700 folder and whatever is under it is not."""
    from harnessrl.sandbox.identity import reachable_by_others

    (sb_base / "file").write_text("x")
    (sb_base / "file").chmod(0o644)
    closed = sb_base / "closed"
    closed.mkdir(mode=0o700)
    (closed / "inner").write_text("x")
    assert reachable_by_others(sb_base) and reachable_by_others(sb_base / "file")
    assert not reachable_by_others(closed) and not reachable_by_others(closed / "inner")
    assert not reachable_by_others(sb_base / "missing")


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None, reason="root and setpriv")
def test_a_staging_bind_refused_for_want_of_cap_sys_admin_is_a_sandbox_error(tmp_path: Path) -> None:
    """Root without CAP_SYS_ADMIN (a default container) may not bind a 0700 folder where sandbox uids
    can reach it: a SandboxError that names the folder and the fixes, not a bare OSError from mount."""
    import subprocess

    secret = tmp_path / "private"
    secret.mkdir(mode=0o700)
    code = (
        "import sys; from pathlib import Path; from harnessrl.sandbox import identity\n"
        "from harnessrl.types import SandboxError\n"
        "try: identity.staged(Path(sys.argv[1]), Path(sys.argv[2]))\n"
        "except SandboxError as e: print(e)"
    )
    drop = ["setpriv", "--bounding-set", "-sys_admin", "--inh-caps", "-sys_admin"]
    out = subprocess.run(
        [*drop, sys.executable, "-c", code, str(secret), str(tmp_path / "base")],
        capture_output=True,
        text=True,
    )
    assert out.stdout == (
        f"{secret} is under a folder the sandbox uids cannot pass through (no o+x), and this process may "
        "not bind-mount it where they can (Operation not permitted): give its parents o+x, or move it "
        "(the harness cache: HARNESSRL_CACHE)\n"
    ), out.stderr
    missing = subprocess.run(  # a source that is not there is the mount's own error, said as it is
        [sys.executable, "-c", code, str(secret / "gone"), str(tmp_path / "base")],
        capture_output=True,
        text=True,
    )
    assert missing.stdout == "" and "No such file or directory" in missing.stderr


FORK_CHAIN = """
import os, sys, time
if os.fork() == 0:
    os.setsid()  # out of the command's process group: only the namespace-wide kill reaches it
    n = 0
    while True:
        try:
            if os.fork():
                os._exit(0)  # the parent goes, the child carries on under a new pid
        except OSError:
            continue
        n += 1
        with open("/tmp/alive.new", "w") as f:
            f.write(str(n))
        os.replace("/tmp/alive.new", "/tmp/alive")  # never seen half-written
while not os.path.exists("/tmp/alive"):
    time.sleep(0.01)
"""


async def test_a_fork_chain_is_dead_when_its_command_returns(sb_base: Path) -> None:
    """A daemon that forks and exits in a loop (a new pid each time) out of the command's group is
    killed by one kill(-1) and reaped before the reply: nothing of it runs once the command has
    returned, and the next command finds only the agent and itself."""
    async with await Sandbox.create(SandboxSpec(base_dir=sb_base)) as sb:
        res = await sb.exec(["python3", "-c", FORK_CHAIN], timeout_s=60)
        alive = (sb.root / "tmp" / "alive").read_text()
        await asyncio.sleep(0.3)
        assert (sb.root / "tmp" / "alive").read_text() == alive
        probe = "import os; print(sorted(int(p) for p in os.listdir('/proc') if p.isdigit()), os.getpid())"
        seen = await sb.exec(["python3", "-c", probe])
    assert res.returncode == 0 and int(alive) > 0
    pids, own = seen.stdout.rsplit(" ", 1)
    assert pids == f"[1, {int(own)}]"
