"""`proxy.processes = N` with the asyncio backend (`rollout.lanes`): the rollouts' sessions live in N proxy
processes on this machine, which call the driver's engine through its engine server. Real bubblewrap
sandboxes, the `shell` harness running curl through the sandbox's only way out, the scripted engine
with log-probs. A batch gives the rollouts the proxy in process gives, call for call; the lanes share
the batch; the driver's heap is never frozen; a proxy process killed mid-rollout ends that rollout as
the infrastructure's with its calls kept, and the other lane's rollouts go on."""

from __future__ import annotations

import asyncio
import gc
import os
import shutil
import signal
from pathlib import Path
from typing import Any

import pytest
from test_engine_server import scorer

from harnessrl.chat.format import ChatFormat
from harnessrl.chat.tokenizers import qwen3_tokenizer
from harnessrl.config import Config
from harnessrl.engines.scripted import Script, ScriptedEngine
from harnessrl.rollout.lanes import ProcessLanes
from harnessrl.rollout.runner import RolloutJob
from harnessrl.rollout.session import RolloutStack
from harnessrl.types import Checker, Rollout, Task, TaskFile

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")

CHECK = """
import json, sys
from pathlib import Path
def grade(transcript, workspace_path):
    p = Path(workspace_path) / "reply.json"
    return {"score": 1.0 if p.is_file() and "hi there" in p.read_text() else 0.25}
if __name__ == "__main__":
    print(json.dumps(grade([], sys.argv[1])))
"""
CURL = (
    'curl -sf -X POST "$HARNESSRL_BASE_URL/v1/chat/completions" -H "content-type: application/json" '
    '-H "authorization: Bearer $HARNESSRL_API_KEY" '
    '-d "{\\"model\\":\\"m\\",\\"max_tokens\\":8,\\"messages\\":[{\\"role\\":\\"user\\",'
    '\\"content\\":\\"$HARNESSRL_PROMPT\\"}]}" > reply.json'
)
COMMAND = f"{CURL} && if grep -q WAIT reply.json; then sleep 600; fi"


def jobs(prompts: list[str]) -> list[RolloutJob]:
    tasks = [
        Task(id=f"t{i}", prompt=p, workspace=[TaskFile(path="README.md", content="task\n")],
             checker=Checker(files=[TaskFile(path="reward/check.py", content=CHECK)]))
        for i, p in enumerate(prompts)
    ]  # fmt: skip
    return [
        RolloutJob(t, "shell", rollout_id=f"r{i}", options={"command": COMMAND}, seed=i)
        for i, t in enumerate(tasks)
    ]


def engine() -> ScriptedEngine:
    """Answers "hi there"; a prompt asking to hang gets "WAIT" (the harness then sleeps)."""
    scripts = [Script(turns=["WAIT"], match="hang"), Script(turns=["hi there"])]
    return ScriptedEngine(ChatFormat(qwen3_tokenizer()), scripts, scorer=scorer)


def config(out: Path, processes: int) -> Config:
    return Config.model_validate(
        {
            "engine": {"type": "scripted", "model": "tiny-qwen3", "sampling": {"max_tokens": 8}},
            "proxy": {"processes": processes},
            "rollout": {"concurrency": 4, "timeout_s": 600.0, "out_dir": str(out)},
        }
    )


def fingerprint(rollouts: list[Rollout]) -> list[tuple[Any, ...]]:
    return [
        (r.rollout_id, r.status_label, r.fault, r.reward,
         [(c.index, c.prompt_ids, c.output_ids, c.output_logprobs, c.finish_reason, c.render,
           c.weights_version, c.tokenizer_digest) for c in r.calls])
        for r in rollouts
    ]  # fmt: skip


async def run(cfg: Config, prompts: list[str]) -> tuple[list[Rollout], list[int]]:
    """The rollouts, and how many requests each proxy process took in (none: the proxy in process)."""
    async with RolloutStack.from_config(cfg, [], engine=engine()) as stack:
        assert stack.runner is not None
        rollouts = await stack.runner.run_many(jobs(prompts))
        served = []
        if isinstance(stack.runner, ProcessLanes):
            served = [(await p.stats())["requests"] for p in stack.runner.proxies]
    return rollouts, served


async def test_proxy_processes_give_the_rollouts_the_proxy_in_process_gives(tmp_path: Path) -> None:
    prompts = ["say hi", "say hello", "say hi again", "say hey"]
    frozen = gc.get_freeze_count()
    local, _ = await run(config(tmp_path / "p0", 0), prompts)
    one, served_one = await run(config(tmp_path / "p1", 1), prompts)
    two, served_two = await run(config(tmp_path / "p2", 2), prompts)
    assert [r.status_label for r in local] == ["ok"] * 4 and [r.reward for r in local] == [1.0] * 4
    assert all(len(r.calls) == 1 and r.calls[0].output_logprobs[0] < 0 for r in local)
    assert fingerprint(one) == fingerprint(local) and fingerprint(two) == fingerprint(local)
    assert served_one == [4] and served_two == [2, 2]  # each lane served its own share of the batch
    assert gc.get_freeze_count() == frozen  # the driver's heap (the trainer's) is left alone
    for r in two:  # the calls came through the rollout's folder, as its artifact says
        assert (tmp_path / "p2" / r.rollout_id / "calls.jsonl").read_text().count("\n") == 1


async def test_a_killed_proxy_process_ends_its_rollout_as_infra_with_its_calls(tmp_path: Path) -> None:
    done: list[Rollout] = []
    eng = engine()
    async with RolloutStack.from_config(config(tmp_path, 2), [], engine=eng) as stack:
        lanes = stack.runner
        assert isinstance(lanes, ProcessLanes)
        batch = asyncio.ensure_future(lanes.run_many(jobs(["hang", "a", "b", "c"]), on_done=done.append))
        while len(done) < 3 or eng.calls < 4:
            await asyncio.sleep(0.05)
        (proxy,) = [p for p in lanes.proxies if "r0" in p]
        assert proxy.pid is not None
        os.kill(proxy.pid, signal.SIGKILL)
        rollouts = await asyncio.wait_for(batch, timeout=120)
    hung = rollouts[0]
    assert [r.status_label for r in rollouts] == ["engine_error", "ok", "ok", "ok"]
    assert hung.fault == "infra" and hung.status_reason.startswith("proxy process died (proxy process ")
    assert [c.text for c in hung.calls] == ["WAIT"]  # the call it made is kept
    assert (tmp_path / "r0" / "rollout.json").is_file() and hung.reward is None
