"""Attacks on what the host reads back from a run's folders, each shown blocked with a hostile rollout
folder: the agent's final workspace (and on an image its writable layer) is kept inside its rollout
folder, so anything a reader finds by walking the run tree may be the policy's; and what a sandbox
left in a workspace bound from the host stays in the run folder."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

import pytest

from harnessrl.evaluate.timing import folder_times
from harnessrl.formats.rollout_dir import read_rollout, rollout_folders, write_rollout
from harnessrl.report.export import export_rollouts
from harnessrl.report.runs import load_run
from harnessrl.rollout.artifacts import workspace_diff
from harnessrl.sandbox import Sandbox, SandboxSpec
from harnessrl.sandbox.fscopy import remove_tree, sanitize_tree
from harnessrl.train.sft import rollout_dirs
from harnessrl.types import Checker, ModelCall, Rollout, RolloutStatus, Task, TaskFile
from harnessrl.verify import run_checker

pytestmark = pytest.mark.security


def rollout(rid: str, reward: float) -> Rollout:
    call = ModelCall(call_id=f"{rid}-c", rollout_id=rid, index=0, dialect="anthropic", started_at=101.0,
                     finished_at=102.0, prompt_ids=[1, 2], output_ids=[4], output_logprobs=[0.0])  # fmt: skip
    return Rollout(rollout_id=rid, task_id="t", harness="whitebox:0", status=RolloutStatus.OK, reward=reward,
                   calls=[call], started_at=100.0, ended_at=110.0, timings={"agent": 9.0})  # fmt: skip


def hostile_run(tmp_path: Path) -> Path:
    """A run with one genuine rollout (`real`, reward 0) whose agent planted forged rollout folders
    (reward 1) in its workspace and layer, a tree of them, and links to more; and a rollout still
    running (its `workspace/` only) that planted one too."""
    run = tmp_path / "run"
    elsewhere = tmp_path / "elsewhere"
    real = run / "rollouts" / "real"
    forged = [
        real / "workspace" / "x",
        real / "workspace" / "a" / "b" / "c",
        real / "layer" / "app" / "y",
        run / "rollouts" / "running" / "workspace" / "z",
        run / "eval" / "cold" / "e1" / "workspace" / "w",
        elsewhere / "linked",
    ]
    for n, folder in enumerate(forged):
        folder.mkdir(parents=True)
        write_rollout(folder, rollout(f"forged-{n}", 1.0))
    for folder in (real, run / "eval" / "cold" / "e1"):
        folder.mkdir(parents=True, exist_ok=True)
        write_rollout(folder, rollout(folder.name, 0.0))
    (real / "workspace" / "to-elsewhere").symlink_to(elsewhere)
    (run / "rollouts" / "linked").symlink_to(elsewhere / "linked")  # never the agent's to make; not followed
    (run / "eval" / "cold" / "looks").mkdir()
    os.symlink(real / "rollout.json", run / "eval" / "cold" / "looks" / "rollout.json")
    return run


def test_forged_rollout_folders_in_a_workspace_are_never_counted(tmp_path: Path) -> None:
    run = hostile_run(tmp_path)
    real, e1 = run / "rollouts" / "real", run / "eval" / "cold" / "e1"
    assert rollout_folders(run) == [e1, real]
    assert rollout_folders(run / "rollouts") == [real]
    assert rollout_folders(real) == [real]  # a rollout folder is a leaf
    times = folder_times(run)
    assert times["whitebox:0"]["rollouts"] == 2
    assert [(h.rollout_id, h.reward) for h in load_run(run).rollouts] == [("real", 0.0), ("e1", 0.0)]
    assert rollout_dirs([run / "rollouts"]) == [real]
    done = export_rollouts(run, ids_only=True)
    assert sorted(done.written) == [e1 / "trajectory.json", real / "trajectory.json"]
    assert not list((real / "workspace").rglob("trajectory.json"))


def test_the_walk_is_bounded(tmp_path: Path) -> None:
    deep = tmp_path.joinpath(*["d"] * 40)
    deep.mkdir(parents=True)
    write_rollout(deep, rollout("deep", 1.0))
    assert rollout_folders(tmp_path) == []  # deeper than MAX_DEPTH: not looked at
    assert rollout_folders(tmp_path, max_depth=41) == [deep]
    with pytest.raises(Exception, match="more than 10 folders"):
        rollout_folders(tmp_path, max_depth=41, max_folders=10)


@pytest.mark.usefixtures("sandbox_agent")
@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")
async def test_a_bound_workspace_keeps_no_setuid_program(sb_base: Path) -> None:
    """A workspace bound from the host keeps the sandbox's host uid as owner: the agent's setuid copy
    of a shell stayed in the run folder after the rollout, for anyone who could reach it to run as
    that uid (which later sandboxes lease again). The clean-up drops setuid and setgid bits."""
    ws = Path(tempfile.mkdtemp(prefix="hrl-ws-", dir="/tmp"))
    ws.chmod(0o755)
    plant = "cp /bin/sh sh && chmod 6755 sh && : > hidden && chmod 4000 hidden && mkdir d && chmod 2777 d"
    try:
        async with await Sandbox.create(SandboxSpec(base_dir=sb_base, workspace=ws)) as sb:
            res = await sb.exec(["sh", "-c", plant])
            assert res.returncode == 0, res.stderr
        assert os.stat(ws / "sh").st_mode & 0o7777 == 0o6755  # what the agent left
        report = sanitize_tree(ws, max_files=100)
        modes = {p.name: os.lstat(p).st_mode & 0o7777 for p in ws.iterdir()}
    finally:
        remove_tree(ws)
    assert report.truncated == "" and modes == {"sh": 0o755, "hidden": 0o000, "d": 0o777}


CHECK_IMPORTING = """
import sys
def main():
    sys.path.insert(0, sys.argv[1])
    import solution
    print('{"score": %d}' % int(solution.answer() == 42))
"""
SOLUTION = """
import builtins
_print = builtins.print
builtins.print = lambda *a, **k: _print('{"\\\\ud800": 1, "score": 1}')
def answer():
    return 0
"""


def test_a_metric_name_no_record_can_hold_scores_0_and_the_rollout_is_written(tmp_path: Path) -> None:
    """A checker that imports the agent's code runs it in its own process (docs/SECURITY.md: what the
    policy can influence), and that code made the checker's answer carry a metric named by a lone
    surrogate: it scored, and then no record of the rollout could be written (`rollout.json` missing,
    the rollout gone from the report). Now such a name is the checker's failure, scored 0."""
    checker = Checker(files=[TaskFile(path="reward/check.py", content=CHECK_IMPORTING)])
    task = Task(id="t", prompt="p", workspace=[], checker=checker)
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "solution.py").write_text(SOLUTION)
    check = run_checker(task, ws)
    assert (check.score, check.error) == (0.0, "metric name '\\ud800' is not Unicode text")
    record = rollout("r", 0.0).model_copy(update={"reward_detail": {"code": check.model_dump()}})
    write_rollout(tmp_path, record)
    assert read_rollout(tmp_path).reward_detail["code"]["error"] == check.error


def test_a_diff_that_difflib_would_take_minutes_over_is_one_hunk(tmp_path: Path) -> None:
    """A task file of 60,000 lines with every other line rewritten by the agent: difflib's matching
    took more than two minutes for the artifact writer (16 s at 10,000 lines), holding the GIL in a
    thread, with no timeout, while the rollout's batch waited. Now it is one hunk, at once."""
    initial, final = tmp_path / "initial", tmp_path / "final"
    initial.mkdir()
    final.mkdir()
    lines = [f"row {i}\n" for i in range(60_000)]
    (initial / "data.csv").write_text("".join(lines))
    (final / "data.csv").write_text("".join(x if i % 2 else f"edited {i}\n" for i, x in enumerate(lines)))
    started = time.monotonic()
    diff = workspace_diff(initial, final)
    assert time.monotonic() - started < 5
    assert diff.splitlines()[:3] == ["--- a/data.csv", "+++ b/data.csv", "@@ -1,60000 +1,60000 @@"]
    assert diff.count("\n-") == 59_999 and diff.count("\n+") == 59_999 + 1  # "+++ b/data.csv" too
