"""Two Ray nodes on one machine that are really apart on the network: each in a network namespace of
its own, joined by one veth link with private addresses (10.231.0.1 = head, 10.231.0.2 = worker node);
nothing else is addressed. The driver (proxy, engine, trainer) runs in the head's namespace, so the
worker node's sandboxes reach the proxy only across the link, as on two machines.

The test runs two real training steps through the Ray backend (`rollout.backend = "ray"`, one worker
actor per node, the `shell` harness running curl, the scripted engine with real log-probs, the real
Trainer) and shows: rollouts made on the worker node are trained; the proxy binds the address it is
told and answers a request from the worker node that carries no rollout token with 401; and in the
second step, with every rollout waiting on its model call, the worker node's raylet is killed: its
rollouts run again on the head, the step completes with each rollout counted once, and the metrics
say how many were retried.

Marker `multinode`; it needs root (network namespaces), `ip` from iproute2, bubblewrap and Ray
(`harnessrl[ray]`), and skips with the reason otherwise. This file is also the driver: the test runs
it as a program inside the head's namespace (`python test_multinode.py drive OUT`).
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harnessrl.rollout.netsim import HEAD_IP, WORKER_IP, Nodes, kill_raylet, run_in, two_node_cluster, why_not

PY = sys.executable
CHECK = """
import json, sys
from pathlib import Path
def grade(transcript, workspace_path):
    p = Path(workspace_path) / "score.txt"
    if not p.is_file():
        return {"score": 0.0}
    return {"score": int(p.read_text().split()[0][:8], 16) / 0xFFFFFFFF}
if __name__ == "__main__":
    print(json.dumps(grade([], sys.argv[1])))
"""
CURL = (
    'curl -sf -X POST "$HARNESSRL_BASE_URL/v1/chat/completions" -H "content-type: application/json" '
    '-H "authorization: Bearer $HARNESSRL_API_KEY" '
    '-d \'{"model":"m","max_tokens":6,"messages":[{"role":"user","content":"say hi"}]}\' > reply.json'
)
VARIED = f'{CURL} && printf %s "$HARNESSRL_API_KEY" | md5sum > score.txt'
"""One model call, then a score derived from the rollout's token: groups have reward variance."""


@pytest.fixture(scope="module")
def nodes() -> Iterator[Nodes]:
    reason = why_not()
    if reason is not None:
        pytest.skip(reason)
    with two_node_cluster() as n:
        yield n


@pytest.mark.multinode
def test_a_step_across_two_nodes_survives_a_lost_node(nodes: Nodes, tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    argv = [PY, __file__, "drive", str(tmp_path), nodes.worker, nodes.address]
    proc = run_in(nodes.head, *argv, env=nodes.env, timeout=540)
    assert proc.returncode == 0 and out.is_file(), proc.stdout[-4000:] + proc.stderr[-8000:]
    got = json.loads(out.read_text())

    # The proxy listens on the address it was told, and from the worker node a request without a
    # live rollout token gets 401 on every route but the health probe.
    assert got["proxy_host"] == HEAD_IP
    assert got["tokenless"] == {"GET /": 200, "GET /v1/models": 401, "POST /v1/chat/completions": 401}

    first, second = got["records"]
    # Step 0: rollouts ran on both nodes, and every one of them was trained.
    assert first["rollouts"] == 4 and first["status"] == {"ok": 4}
    assert first["outcomes"]["workers"] == {
        "by_node": {HEAD_IP: 2, WORKER_IP: 2},
        "retried": 0,
        "lost": 0,
        "artifacts_missing": 0,
    }
    assert first["trained"] is True and first["trained_rollouts"] == 4
    # Step 1: the worker node's raylet was killed with all four rollouts waiting on their calls; its
    # two ran again on the head, the step trained on four rollouts, each counted once.
    assert got["killed_raylet"] > 0
    assert second["rollouts"] == 4 and second["status"] == {"ok": 4}, second["status"]
    assert second["outcomes"]["workers"] == {
        "by_node": {HEAD_IP: 4},
        "retried": 2,
        "lost": 0,
        "artifacts_missing": 0,
    }
    assert second["trained"] is True and second["trained_rollouts"] == 4
    assert second["outcomes"]["calls"] == 4  # the calls of the lost tries are not counted again

    # Artifacts written on either node landed in the one shared run folder.
    folders = got["rollout_folders"]
    assert len(folders) == 8 and all(f["has_rollout_json"] for f in folders.values())
    assert sorted(f["attempts"] for f in folders.values()) == [1] * 6 + [2] * 2
    assert sorted(f["node"] for f in folders.values()) == [HEAD_IP] * 6 + [WORKER_IP] * 2
    assert all(f["status"] == "ok" for f in folders.values()), folders
    # The lost tries ran in folders of their own (a worker that outlives its node may go on writing
    # there); every counted try was moved to `rollouts/<id>`.
    retried = sorted(name for name, f in folders.items() if f["attempts"] == 2)
    assert got["attempt_folders"] == [f"{name}.1" for name in retried]


# -- the driver, run inside the head's namespace ------------------------------------------------------


def tokenless(worker_ns: str, port: int) -> dict[str, int]:
    """Status codes of requests without a token, sent from the worker node's namespace."""
    code = f"""
import json, urllib.request, urllib.error
out = {{}}
for method, path, body in [("GET", "/", None), ("GET", "/v1/models", None),
                           ("POST", "/v1/chat/completions", b'{{"model":"m","messages":[]}}')]:
    req = urllib.request.Request("http://{HEAD_IP}:{port}" + path, data=body, method=method,
                                 headers={{"content-type": "application/json"}})
    try:
        out[method + " " + path] = urllib.request.urlopen(req, timeout=30).status
    except urllib.error.HTTPError as e:
        out[method + " " + path] = e.code
print(json.dumps(out))
"""
    proc = run_in(worker_ns, PY, "-c", code, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return dict(json.loads(proc.stdout))


def drive(out_dir: Path, worker_ns: str, address: str) -> dict[str, Any]:
    from harnessrl.chat.format import ChatFormat
    from harnessrl.config import Config
    from harnessrl.engines.models import load_model, load_tokenizer
    from harnessrl.engines.scripted import Script, ScriptedEngine
    from harnessrl.protocols import GenerationResult, SamplingParams
    from harnessrl.rollout.ray_backend import RayRolloutRunner
    from harnessrl.rollout.session import RolloutStack
    from harnessrl.train.build import build_trainer
    from harnessrl.train.loop import TrainLoop
    from harnessrl.types import Checker, Task, TaskFile

    class Gated(ScriptedEngine):
        """Answers "hi there"; while the gate is shut every call waits before generating."""

        def __init__(self) -> None:
            fmt = ChatFormat(load_tokenizer("tiny-qwen3"))
            model = load_model("tiny-qwen3", "float32", "cpu")
            super().__init__(fmt, [Script(turns=["hi there"])], model=model)
            self.gate: asyncio.Event | None = None
            self.waiting = 0

        async def generate(self, prompt_ids: list[int], sampling: SamplingParams) -> GenerationResult:
            if self.gate is not None and not self.gate.is_set():
                self.waiting += 1
                await self.gate.wait()
            return await super().generate(prompt_ids, sampling)

    tasks = [
        Task(
            id=f"t{i}",
            prompt="write a score",
            workspace=[TaskFile(path="README.md", content="task\n")],
            checker=Checker(files=[TaskFile(path="reward/check.py", content=CHECK)]),
        )
        for i in range(2)
    ]
    cfg = Config.model_validate(
        {
            "engine": {"type": "scripted", "model": "tiny-qwen3", "sampling": {"max_tokens": 6}},
            "proxy": {"host": HEAD_IP},
            "rollout": {
                "concurrency": 2,
                "timeout_s": 300.0,
                "backend": "ray",
                "ray": {
                    "address": address,
                    "workers": 2,
                    "worker_cpus": 1.0,
                    "retries": 1,
                    "max_restarts": 0,
                },
            },
            "train": {
                "lr": 1e-2,
                "steps": 2,
                "seed": 3,
                "out_dir": str(out_dir / "run"),
                "tasks_per_step": 2,
                "group_size": 2,
                "harnesses": ["shell"],
                "harness_options": {"shell": {"command": VARIED}},
            },
        }
    )
    engine = Gated()
    loop = TrainLoop(cfg, tasks, build_trainer(cfg), engine, echo=lambda line: print(line, flush=True))
    loop.out_dir.mkdir(parents=True)

    async def main() -> dict[str, Any]:
        async with RolloutStack.from_config(loop.rollout_config(), tasks, engine=engine) as stack:
            runner = stack.runner
            assert isinstance(runner, RayRolloutRunner)
            result: dict[str, Any] = {"proxy_host": stack.server.host}
            result["tokenless"] = await asyncio.to_thread(tokenless, worker_ns, stack.server.port)
            first = await loop.run_step(runner, 0)
            engine.gate = asyncio.Event()
            step = asyncio.create_task(loop.run_step(runner, 1))
            for want in (4, 6):  # all four rollouts wait on a call; then the two that run again
                deadline = time.monotonic() + 180
                while engine.waiting < want and not step.done() and time.monotonic() < deadline:
                    await asyncio.sleep(0.1)
                if want == 4:
                    result["killed_raylet"] = kill_raylet(worker_ns)
            engine.gate.set()
            second = await asyncio.wait_for(step, timeout=300)
        result["records"] = [first, second]
        return result

    result = asyncio.run(main())
    rollouts = out_dir / "run" / "rollouts"
    result["rollout_folders"] = {}
    result["attempt_folders"] = sorted(p.name for p in (rollouts / ".attempts").iterdir())
    for rdir in sorted(p for p in rollouts.iterdir() if not p.name.startswith(".")):
        record = rdir / "rollout.json"
        data = json.loads(record.read_text()) if record.is_file() else {}
        result["rollout_folders"][rdir.name] = {
            "has_rollout_json": record.is_file(),
            "node": data.get("node"),
            "attempts": data.get("attempts"),
            "status": data.get("status"),
            "reason": data.get("status_reason"),
        }
    return result


if __name__ == "__main__" and sys.argv[1:2] == ["drive"]:
    out = Path(sys.argv[2])
    (out / "out.json").write_text(json.dumps(drive(out, sys.argv[3], sys.argv[4])))
