"""The rollout runner end to end with the trivial `shell` harness: real bubblewrap sandboxes, the real
proxy on a real port, the scripted engine, real checkers. One batch holds a good rollout and one of
each fault; each must end in its own status without touching the others."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harnessrl.config import SandboxConfig
from harnessrl.proxy.server import ProxyServer
from harnessrl.proxy.testing import scripted_deps
from harnessrl.rollout import RolloutJob, RolloutRunner, RunnerSettings, read_rollout, summarize
from harnessrl.rollout.config import KeepFiles
from harnessrl.rollout.testing import checked_task, curl_call
from harnessrl.types import RolloutStatus, Task

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")

CHECK = """
import json, sys
from pathlib import Path
def grade(transcript, workspace_path):
    p = Path(workspace_path) / "out.txt"
    ok = p.is_file()
    return {"exists": float(ok), "content": float(ok and p.read_text() == "hi")}
def main():
    print(json.dumps(grade([], sys.argv[1])))
if __name__ == "__main__":
    main()
"""

# One model call through the endpoint the sandbox forwards (curl is the "harness" here).
CURL = curl_call()


def make_task(tmp: Path) -> Task:
    return checked_task(
        "t0", "write hi to out.txt", CHECK, input_mount_dir="/root/.openclaw/workspace", source=str(tmp)
    )


@pytest.fixture
async def proxy():
    deps = scripted_deps(["hi"], fault_calls={2})
    async with ProxyServer(deps, port=0) as server:
        yield server


@pytest.fixture
async def make_runner(proxy: ProxyServer, tmp_path: Path):
    """Runners on the proxy, writing under tmp_path/runs; closed (with their pools) at teardown."""
    made: list[RolloutRunner] = []

    def make(
        timeout_s: float = 30.0,
        pool_size: int | None = None,
        concurrency: int = 4,
        pool_max_mb: float = 64.0,
        keep: KeepFiles = "all",
    ) -> RolloutRunner:
        settings = RunnerSettings(
            out_dir=tmp_path / "runs",
            timeout_s=timeout_s,
            concurrency=concurrency,
            sandbox=SandboxConfig(pool_size=pool_size, pool_max_workspace_mb=pool_max_mb),
            keep_agent_files=keep,
        )
        made.append(RolloutRunner(proxy.deps.sessions, ("127.0.0.1", proxy.port), settings))
        return made[-1]

    yield make
    for runner in made:
        await runner.close()


@pytest.mark.parametrize("pool_size", [None, 0], ids=["pooled", "fresh"])
async def test_batch_of_good_and_faulty_rollouts(make_runner, tmp_path: Path, pool_size: int | None) -> None:
    task = make_task(tmp_path)
    bad_mount = task.model_copy(update={"input_mount_dir": "/dev/null/ws"})
    runner = make_runner(timeout_s=8.0, pool_size=pool_size)
    # Call order matters for the engine fault (the engine's 3rd call fails): run the good one first.
    good = await runner.run(
        RolloutJob(task, "shell", "good", options={"command": f"{CURL} && printf hi > out.txt"})
    )
    half = await runner.run(
        RolloutJob(task, "shell", "half", options={"command": f"{CURL} && touch out.txt"})
    )
    jobs = [
        RolloutJob(task, "shell", "engine", options={"command": f"{CURL}; printf hi > out.txt"}),
        RolloutJob(task, "shell", "crash", options={"command": "printf hi > out.txt; exit 3"}),
        RolloutJob(task, "shell", "hang", options={"command": "sleep 1000"}),
        RolloutJob(bad_mount, "shell", "nosandbox", options={"command": "true"}),
        RolloutJob(task, "no-such-harness", "noharness"),
        RolloutJob(task, "shell", "nocommand"),
    ]
    engine, crash, hang, nosb, noharness, nocommand = await runner.run_many(jobs)

    assert good.status is RolloutStatus.OK and good.reward == 1.0
    assert half.status is RolloutStatus.OK and half.reward == 0.5
    assert [len(good.calls), len(half.calls)] == [1, 1]
    assert good.calls[0].dialect == "openai_chat" and good.calls[0].text == "hi"
    assert good.group_id == "t0/shell"

    assert engine.status is RolloutStatus.ENGINE_ERROR, engine.status_reason
    assert engine.reward is None and len(engine.calls) == 1 and engine.calls[0].error
    assert crash.status is RolloutStatus.HARNESS_ERROR and crash.exit_code == 3
    assert crash.reward == 1.0  # scored all the same: the workspace is data
    assert hang.status is RolloutStatus.TIMEOUT and hang.reward is None
    assert nosb.status is RolloutStatus.SANDBOX_ERROR and nosb.calls == []
    assert noharness.status is RolloutStatus.HARNESS_ERROR and "unknown harness" in noharness.status_reason
    # options the harness cannot take fail before a sandbox is made
    assert (nocommand.status, nocommand.fault) == (RolloutStatus.HARNESS_ERROR, "infra")
    assert nocommand.status_reason == (
        "shell: cannot configure: the shell harness needs options['command'] (a shell command line)"
    )

    summary = summarize([good, half, engine, crash, hang, nosb, noharness, nocommand])
    assert summary["status"] == {
        "ok": 2,
        "engine_error": 1,
        "harness_error": 3,
        "timeout": 1,
        "sandbox_error": 1,
    }
    assert summary["mean_reward_ok"] == 0.75


async def test_artifacts_round_trip(make_runner, tmp_path: Path) -> None:
    task = make_task(tmp_path)
    runner = make_runner()
    r = await runner.run(
        RolloutJob(task, "shell", "r1", options={"command": f"{CURL} && printf hi > out.txt"})
    )
    rdir = tmp_path / "runs" / "r1"
    for name in (
        "rollout.json",
        "calls.jsonl",
        "harness.stdout",
        "harness.stderr",
        "workspace.diff",
        "reward.json",
    ):
        assert (rdir / name).is_file(), name
    assert (rdir / "workspace" / "out.txt").read_text() == "hi"
    assert not (rdir / "workspace" / "reward").exists()  # the checker never lands in the workspace
    diff = (rdir / "workspace.diff").read_text()
    assert "+++ b/out.txt" in diff and "+hi" in diff
    assert json.loads((rdir / "reward.json").read_text())["reward"] == 1.0
    back = read_rollout(rdir)
    assert back.calls == r.calls and back.reward == 1.0 and back.status is RolloutStatus.OK


@pytest.mark.parametrize("keep", ["none", "failed"])
async def test_keep_agent_files_removes_the_workspace_once_scored(
    make_runner, tmp_path: Path, keep: KeepFiles
) -> None:
    """`rollout.keep_agent_files`: the final workspace goes once the rollout is scored and its diff
    written (every rollout with `none`, the ok ones with `failed`); the record stays readable."""
    task = make_task(tmp_path)
    runner = make_runner(keep=keep)
    jobs = [
        RolloutJob(task, "shell", "ok", options={"command": f"{CURL} && printf hi > out.txt"}),
        RolloutJob(task, "shell", "crash", options={"command": "printf hi > out.txt; exit 3"}),
    ]
    ok, crash = await runner.run_many(jobs)
    assert (ok.status, ok.reward, crash.status) == (RolloutStatus.OK, 1.0, RolloutStatus.HARNESS_ERROR)
    runs = tmp_path / "runs"
    assert not (runs / "ok" / "workspace").exists()
    assert (runs / "crash" / "workspace" / "out.txt").is_file() is (keep == "failed")
    assert "+hi" in (runs / "ok" / "workspace.diff").read_text()
    assert read_rollout(runs / "ok").reward == 1.0


@pytest.mark.parametrize("pool_size", [None, 0], ids=["pooled", "fresh"])
async def test_agent_cannot_see_reward_or_other_rollouts(
    make_runner, tmp_path: Path, pool_size: int | None
) -> None:
    task = make_task(tmp_path)
    runner = make_runner(pool_size=pool_size)
    await runner.run(RolloutJob(task, "shell", "first", options={"command": "printf secret > mine.txt"}))
    probe = (
        "ls -a > listing.txt; "
        "find / -path /proc -prune -o -path /usr -prune -o -path '*reward*' -name check.py -print "
        "2>/dev/null > found.txt; "
        f"cat {tmp_path}/runs/first/workspace/mine.txt > leak.txt 2>&1; true"
    )
    r = await runner.run(RolloutJob(task, "shell", "second", options={"command": probe}))
    ws = tmp_path / "runs" / "second" / "workspace"
    assert r.status is RolloutStatus.OK
    assert (ws / "found.txt").read_text() == ""
    assert "secret" not in (ws / "leak.txt").read_text()
    assert "reward" not in (ws / "listing.txt").read_text().split()


async def test_pooled_sandboxes_give_the_same_results(proxy: ProxyServer, tmp_path: Path) -> None:
    task = make_task(tmp_path)
    settings = RunnerSettings(out_dir=tmp_path / "runs", sandbox=SandboxConfig(pool_size=2), concurrency=1)
    async with RolloutRunner(proxy.deps.sessions, ("127.0.0.1", proxy.port), settings) as runner:
        jobs = [
            RolloutJob(task, "shell", f"p{i}", options={"command": "printf hi > out.txt"}) for i in range(3)
        ]
        rollouts = await runner.run_many(jobs)
        [pool] = runner.sandboxes.pools.values()
        assert pool.hits >= 1  # the first acquire creates directly, later ones find prewarmed sandboxes
        assert pool.idle == 2
    assert runner.sandboxes.pools == {} and pool.idle == 0  # closing the runner destroys the idle sandboxes
    assert [r.reward for r in rollouts] == [1.0, 1.0, 1.0]
    for i in range(3):
        ws = tmp_path / "runs" / f"p{i}" / "workspace"
        assert sorted(p.name for p in ws.iterdir()) == ["README.md", "out.txt"]
        assert "+++ b/out.txt" in (tmp_path / "runs" / f"p{i}" / "workspace.diff").read_text()
    assert pool.idle == 0  # closed: no prewarmed sandbox left behind


async def test_pool_follows_concurrency_by_default_and_zero_turns_it_off(make_runner, tmp_path: Path) -> None:
    task = make_task(tmp_path)
    job = RolloutJob(task, "shell", "d0", options={"command": "printf hi > out.txt"})
    pooled = make_runner(concurrency=3)
    assert (await pooled.run(job)).reward == 1.0
    [pool] = pooled.sandboxes.pools.values()
    assert pool.size == 3
    fresh = make_runner(pool_size=0)
    assert (
        await fresh.run(RolloutJob(task, "shell", "d1", options={"command": "printf hi > out.txt"}))
    ).reward == 1.0
    assert fresh.sandboxes.pools == {}


async def test_a_workspace_over_the_pool_limit_gets_a_fresh_bound_sandbox(
    make_runner, tmp_path: Path
) -> None:
    task = make_task(tmp_path)  # README.md: 5 bytes
    big = make_runner(pool_max_mb=4 / 2**20)
    r = await big.run(RolloutJob(task, "shell", "b0", options={"command": "printf hi > out.txt"}))
    assert r.reward == 1.0 and big.sandboxes.pools == {}
    small = make_runner(pool_max_mb=6 / 2**20)
    r = await small.run(RolloutJob(task, "shell", "b1", options={"command": "printf hi > out.txt"}))
    assert r.reward == 1.0 and list(small.sandboxes.pools) == [
        small.sandboxes.spec(task, None).model_dump_json()
    ]


def test_tree_larger_than_stops_at_the_limit(tmp_path: Path) -> None:
    from harnessrl.rollout.agent_sandbox import tree_larger_than

    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "f").write_bytes(b"x" * 10)
    (tmp_path / "g").write_bytes(b"y" * 10)
    assert tree_larger_than(tmp_path, 19) and not tree_larger_than(tmp_path, 20)
    assert not tree_larger_than(tmp_path / "missing", 0)


async def test_the_configured_agent_runs_the_rollout_and_its_checker(
    proxy: ProxyServer, tmp_path: Path
) -> None:
    """`sandbox.agent = "python"` reaches the rollout's sandbox and the checker's (native is the default
    where a compiler is; the sandbox tests run both)."""
    task = make_task(tmp_path)
    settings = RunnerSettings(out_dir=tmp_path / "runs", sandbox=SandboxConfig(agent="python", pool_size=0))
    async with RolloutRunner(proxy.deps.sessions, ("127.0.0.1", proxy.port), settings) as runner:
        assert runner.sandboxes.spec(task, None).agent == "python"
        assert runner._default_checker_runner().agent == "python"  # type: ignore[union-attr]
        r = await runner.run(RolloutJob(task, "shell", "py", options={"command": "printf hi > out.txt"}))
    assert (r.status, r.reward) == (RolloutStatus.OK, 1.0)
