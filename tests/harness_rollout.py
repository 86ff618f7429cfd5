"""Shared by the per-harness end-to-end tests (tests/test_harness_<name>.py): one real harness solves
bundled task_0000 through the proxy with the scripted engine replaying the adapter's reference turns
(the task's reference solution through the harness's own shell tool, then "done"), and the same
harness playing a wrong command scores below 1.0. Not a test module: pytest collects only test_*.py."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, TypeVar

import pytest

from harnessrl.chat.format import ChatFormat
from harnessrl.config import Config
from harnessrl.engines.models import load_tokenizer
from harnessrl.engines.scripted import Script, ScriptedEngine
from harnessrl.harnesses import Endpoint, HarnessContext, get_harness
from harnessrl.rollout import RolloutJob
from harnessrl.rollout.session import RolloutStack, reference_command
from harnessrl.tasks import load_tasks
from harnessrl.types import Rollout, RolloutStatus

MARKS = [
    pytest.mark.harness,
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed"),
    pytest.mark.skipif(shutil.which("npm") is None, reason="npm is needed to install the harness"),
]
F = TypeVar("F")


def harness_test(fn: F) -> F:
    """Marks a test that drives a real harness: `harness`, skipped without bubblewrap or npm."""
    for mark in MARKS:
        fn = mark(fn)
    return fn


def adapter_context(host_home: Path, **kw: Any) -> HarnessContext:
    """A HarnessContext as the runner builds it, for config and command-line tests without a sandbox."""
    base: dict[str, Any] = dict(
        prompt="do it",
        endpoint=Endpoint("http://127.0.0.1:18080/r/tok", "tok"),
        workspace="/workspace",
        home="/home/agent",
        host_home=host_home,
        install_dir=Path("/cache/h"),
    )
    return HarnessContext(**{**base, **kw})


WRONG = "printf 'hello harness\\n' > hello.txt"


async def solve_and_fail(
    harness: str, out: Path, options: dict[str, Any] | None = None
) -> tuple[Rollout, Rollout]:
    """(the reference rollout, the wrong one) of `harness` on bundled task_0000, both asserted ok."""
    task = next(t for t in load_tasks("bundled", split="train").tasks if t.id == "task_0000")
    wrong = task.model_copy(update={"id": "wrong", "prompt": task.prompt + " (second attempt)"})
    cfg = Config()
    cfg.engine.type = "scripted"
    cfg.engine.model = "tiny-qwen3"  # the Qwen3 tokenizer and template: tool calls render natively
    cfg.rollout.harness = harness
    cfg.rollout.out_dir = str(out)
    cfg.rollout.timeout_s = 240
    adapter = get_harness(harness)
    scripts = [  # first match wins: the wrong task's prompt is checked first
        Script(turns=adapter.reference_turns(WRONG), match=wrong.prompt),
        Script(turns=adapter.reference_turns(reference_command(task)), match=task.prompt),
    ]
    engine = ScriptedEngine(ChatFormat(load_tokenizer(cfg.engine.model)), scripts)
    jobs = [RolloutJob(task, harness, "good", options=options or {})]
    jobs.append(RolloutJob(wrong, harness, "bad", options=options or {}))
    async with RolloutStack.from_config(cfg, [task], engine=engine) as stack:
        assert stack.runner is not None
        good, bad = await stack.runner.run_many(jobs)
    assert good.status is RolloutStatus.OK, good.status_reason
    assert bad.status is RolloutStatus.OK, bad.status_reason
    assert (out / "good" / "workspace" / "hello.txt").read_text() == "Hello, harness!\n"
    return good, bad
