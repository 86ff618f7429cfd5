"""Shared body of the per-harness end-to-end tests (`test_harness_<name>.py`): one bundled task through
the real harness CLI in a bubblewrap sandbox, its model calls going to the proxy, the scripted engine
replaying the adapter's known-good sequence (`reference_turns`: the task's reference through the
harness's own shell tool, then its way of finishing), the checker scoring the final workspace in its
own sandbox (reward 1.0); a wrong sequence through the same path, run alongside, scores below 1.0."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, TypeVar

import pytest

from harnessrl.chat.format import ChatFormat
from harnessrl.config import Config
from harnessrl.engines.models import load_tokenizer
from harnessrl.engines.scripted import Script, ScriptedEngine
from harnessrl.harnesses import Endpoint, HarnessContext, get_harness, harness_binds, run_harness
from harnessrl.rollout import RolloutJob
from harnessrl.rollout.session import RolloutStack, reference_command
from harnessrl.sandbox import ExecResult, Sandbox, SandboxSpec
from harnessrl.tasks import load_tasks
from harnessrl.types import Rollout, RolloutStatus

MARKS = [
    pytest.mark.harness,
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed"),
]
WRONG = "printf 'hello harness\\n' > hello.txt"


def scripted_config(harness: str, out: Path) -> Config:
    """A Config for rollouts through `harness` into `out`, answered by the scripted engine (with no
    script of its own: each task's reference through the harness's shell tool) on the Qwen3
    tokenizer and template (tool calls render natively)."""
    cfg = scripted_engine_config()
    cfg.rollout.harness = harness
    cfg.rollout.out_dir = str(out)
    return cfg


def scripted_engine_config() -> Config:
    """The default Config on the scripted engine (`tiny-qwen3`: the Qwen3 tokenizer and template),
    each rollout given 240 s."""
    cfg = Config()
    cfg.engine.type = "scripted"
    cfg.engine.model = "tiny-qwen3"
    cfg.rollout.timeout_s = 240
    return cfg


async def solve_and_fail(
    harness: str, out: Path, options: dict[str, Any] | None = None
) -> tuple[Rollout, Rollout]:
    """(the reference rollout, the wrong one) of bundled task_0000 through `harness` (with adapter
    `options`: one of its modes), both checked."""
    task = next(t for t in load_tasks("bundled", split="train").tasks if t.id == "task_0000")
    wrong_task = task.model_copy(update={"id": "wrong", "prompt": task.prompt + " (second attempt)"})
    cfg = scripted_config(harness, out)
    adapter = get_harness(harness)
    engine = ScriptedEngine(
        ChatFormat(load_tokenizer(cfg.engine.model)),
        [  # first match wins: the wrong task's prompt is checked first
            Script(turns=adapter.reference_turns(WRONG), match=wrong_task.prompt),
            Script(turns=adapter.reference_turns(reference_command(task)), match=task.prompt),
        ],
    )
    async with RolloutStack.from_config(cfg, [task], engine=engine) as stack:
        assert stack.runner is not None
        good, bad = await stack.runner.run_many(
            [
                RolloutJob(task, harness, "good", options=options or {}),
                RolloutJob(wrong_task, harness, "bad", options=options or {}),
            ]
        )
    assert good.status is RolloutStatus.OK, good.status_reason
    assert good.reward == 1.0
    assert (out / "good" / "workspace" / "hello.txt").read_text() == "Hello, harness!\n"
    assert bad.status is RolloutStatus.OK, bad.status_reason
    assert bad.reward is not None and bad.reward < 1.0
    return good, bad


F = TypeVar("F")


def assert_solved(
    good: Rollout,
    tool: str,
    *,
    dialect: str = "openai_chat",
    stream: bool | None = True,
    spliced: bool = True,
) -> None:
    """The usual scripted solve: two calls in `dialect`, the first calling its shell tool `tool`, the
    second `spliced` onto it (the harness kept its history exactly), both streamed or not (`stream`;
    None: either), ending in "done"."""
    assert [c.dialect for c in good.calls] == [dialect, dialect]
    assert good.calls[0].tool_calls[0].name == tool
    if stream is not None:
        assert [("stream" in c.tags) for c in good.calls] == [stream, stream]
    if spliced:
        assert good.calls[1].render == "spliced" and good.calls[1].spliced_from == good.calls[0].call_id
    assert good.final_message == "done"


async def solved(
    harness: str, out: Path, tool: str, options: dict[str, Any] | None = None, **expect: Any
) -> Rollout:
    """`solve_and_fail`, then `assert_solved(good, tool, **expect)`; the good rollout."""
    good, _ = await solve_and_fail(harness, out, options)  # 1.0; the wrong one < 1.0
    assert_solved(good, tool, **expect)
    return good


def harness_test(fn: F) -> F:
    """MARKS on one test, for files that also hold tests without the real harness."""
    for mark in MARKS:
        fn = mark(fn)
    return fn


async def probe_installs(sb_base: Path, command: str) -> ExecResult:
    """`command` run by the shell harness in a sandbox with the harness installs bound read-only, as
    every rollout has them; its raw result."""
    async with await Sandbox.create(SandboxSpec(base_dir=sb_base, ro_binds=harness_binds())) as sb:
        _, raw = await run_harness(
            get_harness("shell"), sb, Endpoint("http://127.0.0.1:1", "k"), "p", timeout_s=60,
            options={"command": command},
        )  # fmt: skip
    return raw


def assert_plain_text_parse(harness: str) -> None:
    """`harness` parses as a CLI that prints the final text on stdout and exits non-zero on an error
    (`parsing.parse_plain_text`): "done", then a 400 on stderr."""
    h = get_harness(harness)
    assert h.parse(ExecResult(0, "done\n", "", False, 1.0)).model_dump() == {
        "ok": True, "exit_code": 0, "final_message": "done", "timed_out": False, "error": "", "turns": None,
    }  # fmt: skip
    failed = h.parse(ExecResult(1, "", "Error: 400 prompt is too long\n", False, 1.0))
    assert (failed.ok, failed.error, failed.exit_code) == (False, "Error: 400 prompt is too long", 1)
    assert failed.final_message == ""


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


def train_two_steps(out: Path, *args: str) -> list[dict[str, Any]]:
    """`harnessrl train ARGS` into `out` in a subprocess from the checkout (one OpenMP thread), as a
    user runs it; its metrics records, each step's 4 rollouts accounted for."""
    root = Path(__file__).resolve().parents[1]
    exe = str(Path(sys.executable).parent / "harnessrl")
    proc = subprocess.run(
        [exe, "train", *args, "-o", f"train.out_dir={json.dumps(str(out))}"],
        cwd=root,
        env=dict(os.environ, OMP_NUM_THREADS="1"),
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records] == [0, 1]
    assert all(sum(r["status"].values()) == 4 for r in records), [r["status"] for r in records]
    return records
