"""The Ray rollout backend: worker actors on a local Ray cluster, with real bubblewrap sandboxes, the
`shell` harness running curl through the sandbox's only way out, the real proxy in this process and
the scripted engine scoring with a tiny Qwen3 (real log-probs).

Ray is the optional extra `harnessrl[ray]` (~260 MB installed): without it these tests skip.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_rollout_lanes import CHECK, CURL  # the same task and curl call as the asyncio lanes

from harnessrl.chat.format import ChatFormat
from harnessrl.config import Config
from harnessrl.engines.models import load_model, load_tokenizer
from harnessrl.engines.scripted import Script, ScriptedEngine
from harnessrl.rollout.ray_backend import RayRolloutRunner
from harnessrl.rollout.runner import RolloutJob
from harnessrl.rollout.session import RolloutStack
from harnessrl.rollout.testing import checked_task
from harnessrl.sandbox import identity
from harnessrl.sandbox.folders import default_base_dir
from harnessrl.types import Rollout, Task

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")

COMMAND = (
    f"{CURL} && if grep -q WAIT reply.json; then sleep 600; fi; "
    'case "$HARNESSRL_PROMPT" in *crash*) exit 3;; esac'
)


def task(task_id: str, prompt: str) -> Task:
    return checked_task(task_id, prompt, CHECK)


def jobs(prompts: list[str]) -> list[RolloutJob]:
    return [
        RolloutJob(task(f"t{i}", p), "shell", rollout_id=f"r{i}", options={"command": COMMAND})
        for i, p in enumerate(prompts)
    ]


class WaitOnce(ScriptedEngine):
    """Answers "hi there"; the first prompt that asks to hang gets "WAIT" (the harness then sleeps)."""

    def __init__(self) -> None:
        fmt = ChatFormat(load_tokenizer("tiny-qwen3"))
        scripts = [Script(turns=["hi there"]), Script(turns=["WAIT"])]
        super().__init__(fmt, scripts, model=load_model("tiny-qwen3", "float32", "cpu"))
        self.waited = False
        self.killed: int | None = None
        """The worker process `kill_hung_worker` killed."""

    def select(self, prompt_ids: list[int]) -> tuple[int, int]:
        text = str(self.fmt.tokenizer.decode(prompt_ids))
        if "hang" in text and not self.waited:
            self.waited = True
            return 1, 0
        return 0, 0


def make_cfg(out: Path, backend: str, **ray_cfg: Any) -> Config:
    return Config.model_validate(
        {
            "engine": {"type": "scripted", "model": "tiny-qwen3", "sampling": {"max_tokens": 8}},
            "rollout": {
                "concurrency": 2,
                "timeout_s": 900.0,
                "out_dir": str(out),
                "backend": backend,
                "ray": {"workers": 2, "worker_cpus": 0.5, **ray_cfg},
            },
        }
    )


@pytest.fixture(scope="module")
def cluster() -> Iterator[None]:
    """One local cluster for the module (starting one costs ~10 s); the runners join it."""
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield
    finally:
        ray.shutdown()


def owner(folder: Path) -> int | None:
    """The pid in a sandbox folder's owner file (None: none readable)."""
    try:
        return int((folder / "owner").read_text())
    except (OSError, ValueError):
        return None


def fingerprint(rollouts: list[Rollout]) -> list[tuple[Any, ...]]:
    return [
        (
            r.rollout_id,
            r.group_id,
            r.status_label,
            r.reward,
            r.exit_code,
            [(c.prompt_ids, c.output_ids, c.output_logprobs, c.finish_reason) for c in r.calls],
        )
        for r in rollouts
    ]


async def run(cfg: Config, engine: ScriptedEngine, prompts: list[str]) -> list[Rollout]:
    async with RolloutStack.from_config(cfg, [], engine=engine) as stack:
        assert stack.runner is not None
        done = await stack.runner.run_many(jobs(prompts))
        if cfg.rollout.backend != "ray":
            return done
        assert isinstance(stack.runner, RayRolloutRunner)
        pids = [await w.pid.remote() for w in stack.runner.workers]
        staged = [p for p in pids if stage_folder(p).exists()]
    assert len(pids) == cfg.rollout.ray.workers
    if identity.drops_privileges() and not identity.reachable_by_others(Path(sys.executable).resolve()):
        assert staged == pids  # each worker staged this python for its sandboxes
    # Closed workers are ended with ray.kill (no exit hooks): each takes its staging binds down first.
    assert [p for p in staged if stage_folder(p).exists()] == []
    return done


def stage_folder(pid: int) -> Path:
    return default_base_dir() / f"hrl-stage-{pid}"


async def test_ray_gives_what_asyncio_gives(tmp_path: Path, cluster: None) -> None:
    prompts = ["say hi", "say hello", "crash after the call", "say hi again"]
    local = await run(make_cfg(tmp_path / "asyncio", "asyncio"), WaitOnce(), prompts)
    remote = await run(make_cfg(tmp_path / "ray", "ray"), WaitOnce(), prompts)
    assert [r.status_label for r in local] == ["ok", "ok", "harness_error", "ok"]
    assert [r.reward for r in local] == [1.0, 1.0, 1.0, 1.0]
    assert all(len(r.calls) == 1 and r.calls[0].output_logprobs[0] < 0 for r in local)
    assert fingerprint(remote) == fingerprint(local)
    for r in remote:  # the workers wrote the folders (same machine here)
        assert (tmp_path / "ray" / r.rollout_id / "rollout.json").is_file()
        assert (tmp_path / "ray" / r.rollout_id / "workspace" / "reply.json").is_file()


async def kill_hung_worker(cfg: Config) -> tuple[list[Rollout], WaitOnce]:
    """Run 3 quick rollouts and one that hangs; once the quick ones are done, SIGKILL the hung one's
    worker process."""
    engine = WaitOnce()
    done: list[Rollout] = []
    async with RolloutStack.from_config(cfg, [], engine=engine) as stack:
        runner = stack.runner
        assert isinstance(runner, RayRolloutRunner)
        step = asyncio.create_task(runner.run_many(jobs(["hang", "a", "b", "c"]), on_done=done.append))
        while len(done) < 3 or not engine.waited:
            await asyncio.sleep(0.05)
        pid = await runner.worker_pid("r0")
        assert pid is not None and pid != os.getpid()
        os.kill(pid, signal.SIGKILL)
        engine.killed = pid
        rollouts = await asyncio.wait_for(step, timeout=120)
        await asyncio.gather(*(w.pid.remote() for w in runner.workers))  # Ray has restarted it
    return rollouts, engine


async def test_a_killed_worker_ends_its_rollout_as_sandbox_error(tmp_path: Path, cluster: None) -> None:
    rollouts, engine = await kill_hung_worker(make_cfg(tmp_path, "ray"))
    # Ray restarted the killed worker, which swept the hung rollout's sandbox (folder and tmpfs) at
    # once instead of leaving it to whichever process next creates a sandbox on the machine.
    assert engine.killed is not None
    assert [f for f in default_base_dir().glob("hrl-sb-*") if owner(f) == engine.killed] == []
    assert [r.status_label for r in rollouts] == ["sandbox_error", "ok", "ok", "ok"], [
        r.status_reason for r in rollouts
    ]
    lost = rollouts[0]
    assert lost.status_reason.startswith("rollout worker died (")
    assert len(lost.calls) == 1 and lost.calls[0].text == "WAIT"  # the call it made is kept
    assert (tmp_path / "r0" / "rollout.json").is_file()
    assert engine.calls == 4


async def test_a_killed_worker_rollout_is_retried(tmp_path: Path, cluster: None) -> None:
    rollouts, engine = await kill_hung_worker(make_cfg(tmp_path, "ray", retries=1))
    assert [r.status_label for r in rollouts] == ["ok", "ok", "ok", "ok"], [r.status_reason for r in rollouts]
    assert [r.reward for r in rollouts] == [1.0, 1.0, 1.0, 1.0]
    assert rollouts[0].calls[0].text == "hi there"  # the second attempt's call only
    assert engine.calls == 5
