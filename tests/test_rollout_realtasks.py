"""Real tasks end to end (issue 12): the ClawGym-layout example plus three tasks of our own in that
layout that need `python`, pytest and numpy (`tests/fixtures/clawgym-realtasks`), through each real
harness CLI in a bubblewrap sandbox with the sandbox agent environment, scored by their checkers in
the checker sandbox. With the scripted engine (each task's reference as one shell tool call) every
rollout must be `ok` with reward 1.0; a first prompt over the context ends the rollout at its first
call; with the embedded model (slow) the small model fails, and the point is that statuses are right.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harnessrl.config import Config
from harnessrl.rollout import RolloutJob
from harnessrl.rollout.session import RolloutStack
from harnessrl.sandbox.agent_env import resolve_agent_env
from harnessrl.tasks import load_tasks
from harnessrl.types import RolloutStatus, Task, TaskFile

pytestmark = [
    pytest.mark.harness,
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed"),
    pytest.mark.skipif(shutil.which("npm") is None, reason="npm is needed to install the harnesses"),
    pytest.mark.skipif(resolve_agent_env("auto") is None, reason="no agent environment: scripts/agent_env"),
]
FIXTURES = Path(__file__).parent / "fixtures"
HARNESSES = ["claude-code", "codex", "openclaw"]


def real_tasks() -> list[Task]:
    """task_0000 of the shared example (with a reference added here) and the three of our own."""
    example = load_tasks(FIXTURES / "clawgym-format" / "example_split").tasks[0]
    solve = 'mkdir -p build && printf \'["Ada", "Linus"]\' > build/overdue.json\n'
    example = example.model_copy(update={"reference": TaskFile(path="reference/solve.sh", content=solve)})
    load = load_tasks(FIXTURES / "clawgym-realtasks" / "split")
    assert load.rejected == []
    return [example, *load.tasks]


def config(out: Path, harness: str, **engine: object) -> Config:
    cfg = Config()
    cfg.engine = cfg.engine.model_copy(update={"type": "scripted", "model": "tiny-qwen3", **engine})
    cfg.rollout.harness = harness
    cfg.rollout.out_dir = str(out)
    cfg.rollout.timeout_s = 240
    return cfg


@pytest.mark.parametrize("harness", HARNESSES)
async def test_real_tasks_through_the_harness_with_the_scripted_engine(harness: str, tmp_path: Path) -> None:
    tasks = real_tasks()
    cfg = config(tmp_path, harness)
    async with RolloutStack.from_config(cfg, tasks) as stack:
        assert stack.runner is not None
        rollouts = await stack.runner.run_many([RolloutJob(t, harness, t.id) for t in tasks])
    got = {r.task_id: (r.status.value, r.reward) for r in rollouts}
    assert got == {t.id: ("ok", 1.0) for t in tasks}, [r.status_reason for r in rollouts]
    for r in rollouts:
        assert r.calls[0].tool_calls and not any(c.error for c in r.calls)


async def test_claude_code_first_prompt_over_the_context_ends_at_one_call(tmp_path: Path) -> None:
    """Claude Code with all its tools: a first prompt of ~21,200 SmolLM2 tokens against 8,192."""
    task = real_tasks()[0]
    cfg = config(tmp_path, "claude-code", model="default", context_length=8192)
    async with RolloutStack.from_config(cfg, [task]) as stack:
        assert stack.runner is not None
        r = await stack.runner.run(RolloutJob(task, "claude-code", "big"))
    assert (r.status, r.fault, len(r.calls)) == (RolloutStatus.ENGINE_ERROR, "infra", 1)
    assert r.calls[0].tags == ["stream", "context_overflow"] and r.calls[0].dialect == "anthropic"
    reason = r.status_reason
    head = "context_overflow: the prompt of call 0 does not fit the model: prompt is too long: "
    assert reason.startswith(head)
    assert "tokens > 8191 maximum (the engine's context is 8192 tokens;" in reason
    assert "run Claude Code with `bare`" in reason
    assert r.ended_at - r.started_at < 60  # Claude Code's own retries took ~140 s (measured: report)


STATUSES = {"ok", "timeout", "harness_error", "engine_error"}


@pytest.mark.slow
@pytest.mark.parametrize(
    ("harness", "options"), [("claude-code", {"bare": True}), ("codex", {}), ("openclaw", {})]
)
async def test_real_tasks_with_the_embedded_model(harness: str, options: dict, tmp_path: Path) -> None:
    """SmolLM2-135M (8,192 tokens) on two real tasks: it will mostly fail; each status must say why."""
    tasks = [t for t in real_tasks() if t.id in ("task_numpy", "task_python_cmd")]
    cfg = Config()
    cfg.engine.sampling.max_tokens = 256
    cfg.rollout.out_dir = str(tmp_path)
    cfg.rollout.timeout_s = 240
    async with RolloutStack.from_config(cfg, tasks) as stack:
        assert stack.runner is not None
        jobs = [RolloutJob(t, harness, t.id, options=options) for t in tasks]
        rollouts = await stack.runner.run_many(jobs)
    for r in rollouts:
        assert r.status.value in STATUSES, (r.status, r.status_reason)
        assert r.calls, r.status_reason  # the model was reached in every case
        if r.status is RolloutStatus.OK or r.status is RolloutStatus.HARNESS_ERROR:
            assert r.reward is not None and 0.0 <= r.reward <= 1.0
        if r.status is RolloutStatus.ENGINE_ERROR:
            assert r.status_reason.startswith(("context_overflow: ", "call ")), r.status_reason
        else:
            assert not any(c.error for c in r.calls)
        if r.status is RolloutStatus.TIMEOUT:
            assert r.status_reason.startswith("harness ran past its timeout of 240 s")
