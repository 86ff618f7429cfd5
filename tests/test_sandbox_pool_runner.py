"""SandboxPool (prewarmed sandboxes) and SandboxCommandRunner (checkers in a fresh sandbox)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from harnessrl.sandbox import Sandbox, SandboxSpec
from harnessrl.sandbox.bwrap import bwrap_path, python_prefixes
from harnessrl.sandbox.folders import default_base_dir
from harnessrl.sandbox.pool import SandboxPool
from harnessrl.tasks.loader import load_tasks
from harnessrl.verify.sandboxed import SandboxCommandRunner, named_dirs
from harnessrl.verify.selfcheck import self_check

pytestmark = pytest.mark.skipif(bwrap_path() is None, reason="bubblewrap is not installed")


async def test_pool_prewarms_refills_and_closes(sb_base: Path, tmp_path: Path) -> None:
    spec = SandboxSpec(base_dir=sb_base)
    async with SandboxPool(spec, size=2) as pool:
        assert pool.idle == 2
        first = await pool.acquire()
        assert (pool.hits, first.alive) == (1, True)
        res = await first.exec(["echo", "ok"])
        assert res.stdout == "ok\n"
        await first.destroy()
        for _ in range(100):  # the refill runs in the background
            if pool.idle == 2:
                break
            await asyncio.sleep(0.05)
        assert pool.idle == 2
        other = await pool.acquire(SandboxSpec(base_dir=sb_base, mount_dir="/root/.openclaw/workspace"))
        assert pool.hits == 1  # a different spec bypasses the pool
        assert (await other.exec(["pwd"])).stdout == "/root/.openclaw/workspace\n"
        await other.destroy()
        idle = list(pool._ready)
    assert [sb.alive for sb in idle] == [False, False]
    assert list(tmp_path.iterdir()) == []


async def test_acquire_on_an_empty_pool_waits_for_the_refill_under_way(sb_base: Path, tmp_path: Path) -> None:
    async with SandboxPool(SandboxSpec(base_dir=sb_base), size=1) as pool:
        first = await pool.acquire()  # starts the refill
        assert (pool.idle, len(pool._filling)) == (0, 1)
        second = await pool.acquire()  # takes that refill rather than starting a second creation
        try:
            assert pool.hits == 2 and second is not first and second.alive and pool.failed == 0
        finally:
            for sb in (first, second):
                await sb.destroy()


async def test_queued_callers_are_served_in_order_by_a_bounded_number_of_creations(
    sb_base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under load the pool runs at most `max_creating` creations at once and hands each sandbox made
    to the longest-waiting caller (benchmarks/sandbox.py: why)."""
    create = Sandbox.create.__func__  # type: ignore[attr-defined]
    running, most = 0, 0

    async def counted(cls: type[Sandbox], spec: SandboxSpec) -> Sandbox:
        nonlocal running, most
        running += 1
        most = max(most, running)
        try:
            return await create(cls, spec)
        finally:
            running -= 1

    monkeypatch.setattr(Sandbox, "create", classmethod(counted))
    held: list[Sandbox] = []
    try:
        async with SandboxPool(SandboxSpec(base_dir=sb_base), size=3, max_creating=1) as pool:
            assert (pool.idle, most) == (3, 1)
            held += [await pool.acquire() for _ in range(3)]  # empties it; refills one at a time
            served: list[int] = []

            async def take(i: int) -> None:
                sb = await pool.acquire()
                held.append(sb)
                served.append(i)

            tasks = []
            for i in range(5):
                tasks.append(asyncio.create_task(take(i)))
                await asyncio.sleep(0)  # queued in this order
            await asyncio.gather(*tasks)
            assert served == [0, 1, 2, 3, 4]
            assert most == 1 and pool.hits == 8 and pool.failed == 0
            assert all(sb.alive for sb in held) and len({sb.id for sb in held}) == 8
    finally:
        await asyncio.gather(*(sb.destroy() for sb in held))
    with pytest.raises(ValueError, match="max_creating must be at least 1"):
        SandboxPool(SandboxSpec(base_dir=sb_base), size=1, max_creating=0)


async def test_a_sandbox_made_for_a_caller_that_gave_up_goes_to_the_next(sb_base: Path) -> None:
    async with SandboxPool(SandboxSpec(base_dir=sb_base), size=1, max_creating=1) as pool:
        first = await pool.acquire()
        gave_up = asyncio.create_task(pool.acquire())
        await asyncio.sleep(0)
        assert pool.waiting == 1
        gave_up.cancel()
        with pytest.raises(asyncio.CancelledError):
            await gave_up
        assert pool.waiting == 0
        for _ in range(200):  # the creation under way still lands, idle for the next caller
            if pool.idle == 1:
                break
            await asyncio.sleep(0.02)
        second = await pool.acquire()
        assert second.alive and pool.hits == 2
        for sb in (first, second):
            await sb.destroy()


async def test_pooled_sandbox_hands_its_final_workspace_over(sb_base: Path, tmp_path: Path) -> None:
    async with SandboxPool(SandboxSpec(base_dir=sb_base / "sb"), size=1) as pool:
        sb = await pool.acquire()
        (sb.host_workspace / "task.txt").write_text("input")
        await sb.exec(["sh", "-c", "printf hi > hello.txt; (setsid sleep 987670 &)"])
        await sb.destroy(keep_workspace=tmp_path / "final")
    assert sorted(p.name for p in (tmp_path / "final").iterdir()) == ["hello.txt", "task.txt"]
    assert (tmp_path / "final" / "hello.txt").read_text() == "hi"
    assert not sb.root.exists()


async def test_pool_rejects_shared_workspace(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="must own its workspace"):
        SandboxPool(SandboxSpec(workspace=tmp_path), size=1)


async def test_pool_counts_failed_prewarms_and_acquire_raises(sb_base: Path, tmp_path: Path) -> None:
    from harnessrl.types import SandboxError

    spec = SandboxSpec(base_dir=sb_base / "b", ro_binds=(tmp_path / "missing",))
    async with SandboxPool(spec, size=2, max_creating=2) as pool:
        assert (pool.idle, pool.failed) == (0, 2)  # not retried by itself
        with pytest.raises(SandboxError):
            await pool.acquire()  # the refills it starts fail, and so does its own creation
        assert pool.failed in (3, 4) and pool.waiting == 0  # the second refill may still be failing


def test_named_dirs_binds_workspace_and_script_folders_only(tmp_path: Path) -> None:
    ws, scripts, cwd = tmp_path / "ws", tmp_path / "scripts", tmp_path / "cwd"
    for d in (ws, scripts, cwd):
        d.mkdir()
    (scripts / "solve.sh").write_text("true")
    argv = [
        "/usr/bin/python3",
        str(cwd / "driver.py"),
        str(ws),
        str(scripts / "solve.sh"),
        "/tmp",
        "/",
        "rel",
    ]
    assert named_dirs(argv, cwd) == (ws, scripts)


def test_runner_runs_in_fresh_sandbox_with_named_paths(tmp_path: Path) -> None:
    cwd, ws = tmp_path / "check", tmp_path / "ws"
    cwd.mkdir()
    ws.mkdir()
    (ws / "answer.txt").write_text("42")
    script = f"cat {ws}/answer.txt; echo -n x > {cwd}/result; echo $HOME; ls -A /root 2>/dev/null"
    env = {"HOME": str(cwd), "PATH": "/usr/bin:/bin"}
    out = SandboxCommandRunner().run(["sh", "-c", script, str(ws)], cwd, env, 10)
    # /root shows only what the interpreter binds put there (pyenv installs live under /root).
    under_root = sorted({p.parts[2] for p in map(Path, python_prefixes()) if p.parts[1:2] == ("root",)})
    assert (out.returncode, out.stdout, out.timed_out) == (
        0,
        f"42{cwd}\n" + "".join(f"{n}\n" for n in under_root),
        False,
    )
    assert (cwd / "result").read_text() == "x"
    slow = SandboxCommandRunner().run(["sleep", "30"], cwd, {"PATH": "/usr/bin:/bin"}, 0.3)
    assert (slow.returncode, slow.timed_out) == (-15, True)


async def test_runner_inside_a_running_event_loop(tmp_path: Path) -> None:
    out = SandboxCommandRunner().run(["echo", "hi"], tmp_path, {"PATH": "/usr/bin:/bin"}, 10)
    assert out == (0, "hi\n", "", False)


def test_bundled_task_checker_and_reference_run_sandboxed() -> None:
    """The verifier's own self-check, with every checker and reference process inside bubblewrap."""
    tasks = load_tasks("bundled").tasks
    task = next(t for t in tasks if t.reference is not None and t.checker is not None)
    result = self_check(task, runner=SandboxCommandRunner())
    assert result.reference_error is None
    assert result.reference is not None and result.reference.score == 1.0
    assert result.untouched is not None and result.untouched.score < 1.0
    assert result.ok


async def test_no_sandbox_folders_leak_from_runner(
    tmp_path: Path, sb_base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HARNESSRL_SANDBOX_DIR", str(sb_base))  # not the default folder others share
    base = default_base_dir()
    base.mkdir(parents=True, exist_ok=True)
    before = {p for p in os.listdir(base) if p.startswith("hrl-sb-")}
    SandboxCommandRunner().run(["true"], tmp_path, {"PATH": "/usr/bin:/bin"}, 10)
    after = {p for p in os.listdir(base) if p.startswith("hrl-sb-")}
    assert after - before == set()
    assert Sandbox is not None
