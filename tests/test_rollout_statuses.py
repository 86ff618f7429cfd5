"""Statuses that say what happened (issue 12, items 1 and 4), with the `shell` harness: real bubblewrap
sandboxes, the real proxy on a real port, the scripted engine.

- a first prompt over the context ends the rollout at that call, however often the harness retries;
- an engine error wins over the harness's own timeout;
- a call still generating when the rollout times out is kept, as a partial record;
- a status reason starts with its cause, and its tail is bounded.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import time
from pathlib import Path

import pytest

from harnessrl.config import SandboxConfig
from harnessrl.protocols import GenerationResult, SamplingParams
from harnessrl.proxy.deps import Generator
from harnessrl.proxy.server import ProxyServer
from harnessrl.proxy.testing import scripted_deps
from harnessrl.rollout import RolloutJob, RolloutRunner, RunnerSettings
from harnessrl.rollout.status import REASON_HEAD, REASON_TAIL
from harnessrl.types import RolloutStatus, Task, TaskFile

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")

TASK = Task(id="t0", prompt="p", workspace=[TaskFile(path="README.md", content="task\n")])


def curl(content: str = "say hi") -> str:
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": content}]})
    return (
        'curl -s -X POST "$HARNESSRL_BASE_URL/v1/chat/completions" -H "content-type: application/json" '
        f"-H \"authorization: Bearer $HARNESSRL_API_KEY\" -d '{body}' >> replies.txt"
    )


async def run_one(deps, tmp_path: Path, command: str, timeout_s: float):
    async with ProxyServer(deps, port=0) as server:
        settings = RunnerSettings(
            out_dir=tmp_path / "runs", timeout_s=timeout_s, sandbox=SandboxConfig(pool_size=0)
        )
        async with RolloutRunner(server.deps.sessions, ("127.0.0.1", server.port), settings) as runner:
            started = time.monotonic()
            rollout = await runner.run(RolloutJob(TASK, "shell", "r0", options={"command": command}))
            return rollout, time.monotonic() - started


async def test_a_prompt_over_the_context_stops_the_rollout_at_its_first_call(tmp_path: Path) -> None:
    # The "harness" retries the 400 eleven times, then would sit out its whole timeout.
    retries = f"for i in 1 2 3 4 5 6 7 8 9 10 11; do {curl('word ' * 300)}; done; sleep 120"
    rollout, secs = await run_one(scripted_deps(["hi"], max_context=256), tmp_path, retries, 120.0)
    # the first call's prompt is the harness's own: a configuration that does not fit, not the policy
    assert (rollout.status, rollout.fault) == (RolloutStatus.ENGINE_ERROR, "infra")
    assert len(rollout.calls) == 1 and rollout.calls[0].tags == ["context_overflow"]
    reason = rollout.status_reason
    assert reason.startswith("context_overflow: the prompt of call 0 does not fit the model: ")
    assert "prompt is too long" not in reason  # the OpenAI shape: chat completions
    assert "resulted in 313 tokens" in reason and "maximum context length is 255 tokens" in reason
    assert "use a harness with shorter prompts" in reason and "engine.context_length" in reason
    assert reason.endswith("(stopped at that call)")
    assert rollout.reward is None
    assert secs < 60  # far from the 120 s the harness would have slept (fast-fail figure: see report)


async def test_an_overflow_after_the_first_call_is_the_policys(tmp_path: Path) -> None:
    """Any command can send its own over-long request with the rollout's key: that overflow must be
    trained as the policy's 0 (were it dropped as the engine's fault, it would be a way out of a 0)."""
    command = f"{curl()}; {curl('word ' * 300)}; sleep 120"
    rollout, _ = await run_one(scripted_deps(["hi"], max_context=256), tmp_path, command, 120.0)
    assert (rollout.status, rollout.fault) == (RolloutStatus.ENGINE_ERROR, "policy"), rollout.status_reason
    assert [c.tags for c in rollout.calls] == [[], ["context_overflow"]]
    assert rollout.status_reason.startswith("context_overflow: the prompt of call 1 does not fit")


async def test_an_engine_error_wins_over_the_harness_timeout(tmp_path: Path) -> None:
    rollout, _ = await run_one(scripted_deps(["hi"], fault_calls={0}), tmp_path, f"{curl()}; sleep 1000", 3.0)
    assert (rollout.status, rollout.fault) == (RolloutStatus.ENGINE_ERROR, "infra"), rollout.status_reason
    assert rollout.status_reason.startswith("call 0: ")
    assert len(rollout.calls) == 1 and rollout.calls[0].error is not None


class GatedEngine:
    """Wraps an engine; every generate waits until the test opens the gate."""

    def __init__(self, inner: Generator) -> None:
        self.inner = inner
        self.gate = asyncio.Event()
        self.started = 0

    async def generate(self, prompt_ids: list[int], sampling: SamplingParams) -> GenerationResult:
        self.started += 1
        await self.gate.wait()
        return await self.inner.generate(prompt_ids, sampling)


async def test_a_call_in_flight_at_the_timeout_is_kept_as_partial(tmp_path: Path) -> None:
    deps = scripted_deps(["hi"])
    engine = GatedEngine(deps.engine)
    deps.engine = engine
    noise = "python3 -c \"import sys; sys.stderr.write('x' * 5000 + 'LAST')\""
    try:
        rollout, _ = await run_one(deps, tmp_path, f"{noise}; {curl()}", 3.0)
    finally:
        engine.gate.set()
    assert engine.started == 1
    assert (rollout.status, rollout.fault) == (RolloutStatus.TIMEOUT, "policy")
    assert len(rollout.calls) == 1
    call = rollout.calls[0]
    assert (call.partial, call.finish_reason, call.error, call.output_ids) == (True, "abort", None, [])
    assert call.tags == ["in_flight_at_close"] and len(call.prompt_ids) > 0
    reason = rollout.status_reason  # the cause first, then the end of what the harness printed
    assert reason.startswith("harness ran past its timeout of 3 s | [... ")
    assert reason.endswith("xxxxLAST") and len(reason) < REASON_HEAD + REASON_TAIL + 100


async def test_a_status_reason_is_cause_then_bounded_tail(tmp_path: Path) -> None:
    command = "python3 -c \"import sys; sys.stderr.write('y' * 9000 + 'END')\"; exit 3"
    rollout, _ = await run_one(scripted_deps(["hi"]), tmp_path, command, 30.0)
    assert rollout.status is RolloutStatus.HARNESS_ERROR and rollout.exit_code == 3
    assert rollout.fault == "infra"  # it never talked to the model: nothing the policy did
    reason = rollout.status_reason
    assert reason.startswith("harness failed (exit code 3) | [... ") and reason.endswith("yyyEND")
    assert len(reason.split(" | ", 1)[1]) == len("[... 8003 characters cut ...] ") + REASON_TAIL


ECHO_CHECKER = """
from pathlib import Path
def grade(transcript, workspace_path):
    return {"score": int(Path(workspace_path, "answer.txt").read_text())}
"""


async def test_an_exception_while_scoring_the_policys_workspace_is_the_policys(tmp_path: Path) -> None:
    """Once the harness ran, whatever breaks while reading what it left is the policy's failure
    (reward 0, trained), whatever the exception: here a checker hands back the agent's 400-digit
    answer and `float()` of it raised OverflowError, which reached the runner's catch-all as an
    "internal error" of the infrastructure (dropped, never trained). The control scores 0 as data."""
    from harnessrl.types import Checker

    task = TASK.model_copy(
        update={"checker": Checker(files=[TaskFile(path="reward/check.py", content=ECHO_CHECKER)])}
    )
    deps = scripted_deps(["hi"])
    async with ProxyServer(deps, port=0) as server:
        settings = RunnerSettings(out_dir=tmp_path / "runs", timeout_s=60, sandbox=SandboxConfig(pool_size=0))
        async with RolloutRunner(server.deps.sessions, ("127.0.0.1", server.port), settings) as runner:
            huge, plain = await runner.run_many(
                [
                    RolloutJob(
                        task,
                        "shell",
                        "huge",
                        options={"command": f"{curl()}; echo 1{'0' * 400} > answer.txt"},
                    ),
                    RolloutJob(task, "shell", "plain", options={"command": f"{curl()}; echo 0 > answer.txt"}),
                ]
            )
    assert (plain.status, plain.reward) == (RolloutStatus.OK, 0.0), plain.status_reason
    assert (huge.status, huge.fault, huge.reward) == (RolloutStatus.VERIFIER_ERROR, "policy", 0.0), (
        huge.status_reason
    )
    assert "internal error" not in huge.status_reason and len(huge.calls) == 1
