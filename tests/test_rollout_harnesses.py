"""Each real harness solves a bundled task end to end: unmodified CLI in a bubblewrap sandbox, its
model calls going to the proxy, the scripted engine replaying a known-good action sequence (the
task's reference as one shell tool call, then "done"), the checker scoring the final workspace in
its own sandbox. A wrong action sequence through the same path scores below 1.0."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harnessrl.chat.format import ChatFormat
from harnessrl.config import Config
from harnessrl.engines.models import load_tokenizer
from harnessrl.engines.scripted import Script, ScriptedEngine
from harnessrl.harnesses import get_harness
from harnessrl.rollout import RolloutJob
from harnessrl.rollout.session import RolloutStack, reference_command
from harnessrl.tasks import load_tasks
from harnessrl.types import RolloutStatus, Task

pytestmark = [
    pytest.mark.harness,
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed"),
    pytest.mark.skipif(shutil.which("npm") is None, reason="npm is needed to install the harnesses"),
]

WRONG = "printf 'hello harness\\n' > hello.txt"


def warmup_task() -> Task:
    tasks = load_tasks("bundled", split="train").tasks
    return next(t for t in tasks if t.id == "task_0000")


def config(out: Path, harness: str) -> Config:
    cfg = Config()
    cfg.engine.type = "scripted"
    cfg.engine.model = "tiny-qwen3"  # the Qwen3 tokenizer and template: tool calls render natively
    cfg.rollout.harness = harness
    cfg.rollout.out_dir = str(out)
    cfg.rollout.timeout_s = 240
    return cfg


@pytest.mark.parametrize("harness", ["claude-code", "codex", "openclaw"])
async def test_harness_solves_task_and_wrong_sequence_fails(harness: str, tmp_path: Path) -> None:
    task = warmup_task()
    wrong_task = task.model_copy(update={"id": "wrong", "prompt": task.prompt + " (second attempt)"})
    cfg = config(tmp_path, harness)
    fmt = ChatFormat(load_tokenizer(cfg.engine.model))
    adapter = get_harness(harness)
    engine = ScriptedEngine(
        fmt,
        [  # first match wins: the wrong task's prompt is checked first
            Script(turns=adapter.reference_turns(WRONG), match=wrong_task.prompt),
            Script(turns=adapter.reference_turns(reference_command(task)), match=task.prompt),
        ],
    )
    async with RolloutStack.from_config(cfg, [task], engine=engine) as stack:
        assert stack.runner is not None
        good, bad = await stack.runner.run_many(
            [RolloutJob(task, harness, "good"), RolloutJob(wrong_task, harness, "bad")]
        )
    assert good.status is RolloutStatus.OK, good.status_reason
    assert good.reward == 1.0
    assert len(good.calls) >= 2 and good.calls[0].tool_calls and good.calls[0].tool_calls[0].arguments
    assert (tmp_path / "good" / "workspace" / "hello.txt").read_text() == "Hello, harness!\n"
    assert bad.status is RolloutStatus.OK, bad.status_reason
    assert bad.reward is not None and bad.reward < 1.0
    # Consecutive calls of these harnesses extend each other: the proxy spliced the recorded ids.
    assert good.calls[1].render == "spliced" and good.calls[1].spliced_from == good.calls[0].call_id
