"""Two Ray nodes on one machine that are really apart on the network: each in a network namespace of
its own, joined by one veth link with private addresses (10.231.0.1 = head, 10.231.0.2 = worker node);
nothing else is addressed. The driver (engine, engine server, trainer) runs in the head's namespace;
each node's worker actor has a proxy process of its own on that node's loopback, so a sandbox's model
calls stay on its node and only its proxy's engine calls cross the link, as on two machines.

The test runs three real training steps through the Ray backend (`rollout.backend = "ray"`, one worker
actor per node, the `shell` harness making two curl calls, the scripted engine with real log-probs,
the real Trainer) and shows:

- step 0: rollouts made on both nodes are trained, each call recorded once; each node's proxy served
  exactly its own sandboxes' requests (counted), and the engine server saw each node's proxy call it
  from that node's address; from the worker node the engine server answers nothing without the run's
  token (401) and no proxy of the head is reachable;
- step 1: with every rollout waiting on its second call, a token of one node's session is refused by
  the other node's proxy (and taken by its own); then the worker node's proxy process is killed: its
  rollouts end at once as `engine_error` of the infrastructure, never trained, with their first calls
  kept, and their generations are cancelled on the engine; the head's rollouts finish and train;
- step 2: the worker node's raylet is killed while every rollout waits: its rollouts run again on the
  head, each counted once, and the metrics say how many were retried.

Marker `multinode`; it needs root (network namespaces), `ip` from iproute2, bubblewrap and Ray
(`harnessrl[ray]`), and skips with the reason otherwise. This file is also the driver: the test runs
it as a program inside the head's namespace (`python test_multinode.py drive OUT`).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
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


def curl(content: str, out: str) -> str:
    body = json.dumps({"model": "m", "max_tokens": 6, "messages": [{"role": "user", "content": content}]})
    return (
        'curl -sf -X POST "$HARNESSRL_BASE_URL/v1/chat/completions" -H "content-type: application/json" '
        f"-H \"authorization: Bearer $HARNESSRL_API_KEY\" -d '{body}' > {out}"
    )


SCORE = 'printf %s "$HARNESSRL_API_KEY" | md5sum > score.txt'
VARIED = f"{curl('first call', 'a.json')} && {curl('second call', 'b.json')} && {SCORE}"
"""Two model calls, then a score derived from the rollout's token: groups have reward variance."""


@pytest.fixture(scope="module")
def nodes() -> Iterator[Nodes]:
    reason = why_not()
    if reason is not None:
        pytest.skip(reason)
    with two_node_cluster() as n:
        yield n


@pytest.mark.multinode
def test_steps_across_two_nodes_each_with_its_own_proxy(nodes: Nodes, tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    argv = [PY, __file__, "drive", str(tmp_path), nodes.worker, nodes.address]
    proc = run_in(nodes.head, *argv, env=nodes.env, timeout=540)
    assert proc.returncode == 0 and out.is_file(), proc.stdout[-4000:] + proc.stderr[-8000:]
    got = json.loads(out.read_text())
    first, second, third = got["records"]

    # The engine server binds the head's address on the cluster's network and, from the worker node,
    # answers nothing without the run's token; no proxy listens there for the worker's sandboxes.
    assert got["engine_host"] == HEAD_IP
    assert got["from_worker_node"] == {
        "GET /v1/engine": 401,
        "POST /v1/engine/generate": 401,
        "head proxy": "refused",
    }

    # Step 0: two rollouts on each node, every one trained, each call recorded once. Each node's
    # proxy served exactly its own sandboxes' 4 requests, and the engine saw each proxy call from its
    # own node: the sandboxes' requests never crossed the link, only the proxies' engine calls did.
    assert first["rollouts"] == 4 and first["status"] == {"ok": 4}
    assert first["outcomes"]["workers"]["by_node"] == {HEAD_IP: 2, WORKER_IP: 2}
    assert first["trained"] is True and first["trained_rollouts"] == 4 and first["outcomes"]["calls"] == 8
    assert got["proxy_requests"][0] == {HEAD_IP: 4, WORKER_IP: 4}
    assert got["engine_calls_by_peer"][0] == {HEAD_IP: 4, WORKER_IP: 4}
    step0 = [f for f in got["rollout_folders"].values() if f["step"] == 0]
    assert [(f["calls"], f["lines"]) for f in step0] == [(["hi there", "hi there"], 2)] * 4

    # Step 1: a token of one node's session is refused by the other node's proxy, taken by its own.
    assert got["tokens"] == {"worker token at head": 401, "head token at head": 200,
                             "head token at worker": 401, "worker token at worker": 200}  # fmt: skip
    # The worker node's proxy process was killed with both its rollouts waiting on their second call:
    # they ended as the infrastructure's, their first calls kept, never trained; their waiting
    # generations were cancelled; the head's two finished.
    assert got["killed_proxy"] > 0 and got["engine_cancelled"] == 2
    # (each group had one rollout on each node: the head's are left alone in theirs, too small to train)
    assert second["status"] == {"engine_error": 2, "filtered:small_group": 2}, second["status"]
    assert second["failures_trained"] == {} and second["outcomes"]["workers"]["by_node"] == {
        HEAD_IP: 2,
        WORKER_IP: 2,
    }
    killed = [f for f in got["rollout_folders"].values() if f["step"] == 1 and f["status"] == "engine_error"]
    assert [(f["node"], f["fault"], f["calls"]) for f in killed] == [(WORKER_IP, "infra", ["hi there"])] * 2
    assert all(f["reason"].startswith("proxy process died (proxy process ") for f in killed)

    # Step 2: the worker node's raylet was killed with all four rollouts waiting (its proxy process had
    # come back for them); its two ran again on the head, the step trained on four, each counted once.
    assert got["killed_raylet"] > 0 and got["proxy_restarted"] is True
    assert third["rollouts"] == 4 and third["status"] == {"ok": 4}, third["status"]
    assert third["outcomes"]["workers"] == {
        "by_node": {HEAD_IP: 4},
        "retried": 2,
        "lost": 0,
        "artifacts_missing": 0,
    }
    assert third["trained"] is True and third["trained_rollouts"] == 4
    assert third["outcomes"]["calls"] == 8  # the calls of the lost tries are not counted again

    # Artifacts written on either node landed in the one shared run folder.
    folders = got["rollout_folders"]
    assert len(folders) == 12 and all(f["has_rollout_json"] for f in folders.values())
    assert sorted(f["attempts"] for f in folders.values()) == [1] * 10 + [2] * 2
    retried = sorted(name for name, f in folders.items() if f["attempts"] == 2)
    assert got["attempt_folders"] == [f"{name}.1" for name in retried]


# -- the driver, run inside the head's namespace ------------------------------------------------------


def probe(ns: str | None, requests: list[tuple[str, str, str, str | None]]) -> dict[str, Any]:
    """Status codes (or "refused") of (label, method, url, bearer token) requests, sent from namespace
    `ns` (None: here)."""
    code = f"""
import json, urllib.request, urllib.error
out = {{}}
for label, method, url, token in {requests!r}:
    headers = {{"content-type": "application/json"}}
    if token:
        headers["authorization"] = "Bearer " + token
    body = b'{{"model":"m","messages":[]}}' if method == "POST" else None
    try:
        out[label] = urllib.request.urlopen(urllib.request.Request(url, data=body, method=method,
                                                                   headers=headers), timeout=30).status
    except urllib.error.HTTPError as e:
        out[label] = e.code
    except OSError:
        out[label] = "refused"
print(json.dumps(out))
"""
    proc = run_in(ns, PY, "-c", code, timeout=60) if ns else run_in_here(code)
    assert proc.returncode == 0, proc.stderr
    return dict(json.loads(proc.stdout))


async def crossed_tokens(by_node: dict[str, Any], worker_ns: str) -> dict[str, Any]:
    """A live session token of each node's proxy, sent to its own node's proxy and to the other's."""
    tokens, ports = {}, {}
    for n, w in by_node.items():
        tokens[n] = await w.__ray_call__.remote(
            lambda w: next(o.token for o, _ in w.proxy._sessions.values())
        )
        ports[n] = (await w.__ray_call__.remote(lambda w: w.proxy.endpoint))[1]
    head, worker = f"http://127.0.0.1:{ports[HEAD_IP]}", f"http://127.0.0.1:{ports[WORKER_IP]}"
    here = await asyncio.to_thread(probe, None, [
        ("worker token at head", "GET", f"{head}/r/{tokens[WORKER_IP]}/v1/models", None),
        ("head token at head", "GET", f"{head}/r/{tokens[HEAD_IP]}/v1/models", None),
    ])  # fmt: skip
    there = await asyncio.to_thread(probe, worker_ns, [
        ("head token at worker", "GET", f"{worker}/v1/models", tokens[HEAD_IP]),
        ("worker token at worker", "GET", f"{worker}/v1/models", tokens[WORKER_IP]),
    ])  # fmt: skip
    return here | there


def run_in_here(code: str) -> Any:
    import subprocess

    return subprocess.run([PY, "-c", code], capture_output=True, text=True, timeout=60)


def drive(out_dir: Path, worker_ns: str, address: str) -> dict[str, Any]:
    from harnessrl.chat.format import ChatFormat
    from harnessrl.config import Config
    from harnessrl.engines.models import load_model, load_tokenizer
    from harnessrl.engines.scripted import Script, ScriptedEngine
    from harnessrl.protocols import GenerationResult, SamplingParams
    from harnessrl.rollout.ray_backend import RayRolloutRunner
    from harnessrl.rollout.session import RolloutStack
    from harnessrl.train.loop import TrainLoop, build_trainer
    from harnessrl.types import Checker, Task, TaskFile

    class Gated(ScriptedEngine):
        """Answers "hi there"; while the gate is shut every second call waits before generating."""

        def __init__(self) -> None:
            fmt = ChatFormat(load_tokenizer("tiny-qwen3"))
            model = load_model("tiny-qwen3", "float32", "cpu")
            super().__init__(fmt, [Script(turns=["hi there"])], model=model)
            self.gate: asyncio.Event | None = None
            self.waiting = 0

        async def generate(self, prompt_ids: list[int], sampling: SamplingParams) -> GenerationResult:
            second = "second call" in self.fmt.tokenizer.decode(prompt_ids)
            if second and self.gate is not None and not self.gate.is_set():
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
            "rollout": {
                "concurrency": 2,
                "timeout_s": 300.0,
                "backend": "ray",
                "ray": {"address": address, "workers": 2, "worker_cpus": 1, "retries": 1, "max_restarts": 0},
            },
            "train": {
                "lr": 1e-2, "steps": 3, "seed": 3, "out_dir": str(out_dir / "run"), "tasks_per_step": 2,
                "group_size": 2, "harnesses": ["shell"], "harness_options": {"shell": {"command": VARIED}},
            },
        }
    )  # fmt: skip
    engine = Gated()
    loop = TrainLoop(cfg, tasks, build_trainer(cfg), engine, echo=lambda line: print(line, flush=True))
    loop.out_dir.mkdir(parents=True)

    async def until(what: Any, timeout: float = 180) -> None:
        deadline = time.monotonic() + timeout
        while not what() and time.monotonic() < deadline:
            await asyncio.sleep(0.1)

    async def main() -> dict[str, Any]:
        async with RolloutStack.from_config(loop.rollout_config(), tasks, engine=engine) as stack:
            runner, server = stack.runner, stack.engine_server
            assert isinstance(runner, RayRolloutRunner) and server is not None
            nodes = [await w.node.remote() for w in runner.workers]
            by_node = dict(zip(nodes, runner.workers, strict=True))
            result: dict[str, Any] = {
                "engine_host": server.host,
                "proxy_requests": [],
                "engine_calls_by_peer": [],
            }
            head_port = (await by_node[HEAD_IP].__ray_call__.remote(lambda w: w.proxy.endpoint))[1]
            engine_url = f"http://{HEAD_IP}:{server.port}"
            result["from_worker_node"] = await asyncio.to_thread(probe, worker_ns, [
                ("GET /v1/engine", "GET", engine_url + "/v1/engine", None),
                ("POST /v1/engine/generate", "POST", engine_url + "/v1/engine/generate", None),
                ("head proxy", "GET", f"http://{HEAD_IP}:{head_port}/", None),
            ])  # fmt: skip

            async def requests() -> dict[str, int]:
                stats = {n: await w.proxy_stats.remote(reset=True) for n, w in by_node.items()}
                return {n: s["requests"] for n, s in stats.items()}

            await requests()  # reset the counts
            first = await loop.run_step(runner, 0)
            result["proxy_requests"].append(await requests())
            result["engine_calls_by_peer"].append(dict(server.served))

            engine.gate = asyncio.Event()
            step = asyncio.create_task(loop.run_step(runner, 1))
            await until(lambda: engine.waiting >= 4 or step.done())
            result["tokens"] = await crossed_tokens(by_node, worker_ns)
            killed = await by_node[WORKER_IP].proxy_pid.remote()
            os.kill(killed, signal.SIGKILL)
            result["killed_proxy"] = killed
            await until(lambda: server.cancelled >= 2 or step.done(), timeout=60)
            result["engine_cancelled"] = server.cancelled
            engine.gate.set()
            second = await asyncio.wait_for(step, timeout=300)

            engine.gate, engine.waiting = asyncio.Event(), 0
            step = asyncio.create_task(loop.run_step(runner, 2))
            await until(lambda: engine.waiting >= 4 or step.done())
            result["proxy_restarted"] = await by_node[WORKER_IP].proxy_pid.remote() not in (None, killed)
            result["killed_raylet"] = kill_raylet(worker_ns)
            await until(lambda: engine.waiting >= 6 or step.done())  # the two that run again
            engine.gate.set()
            third = await asyncio.wait_for(step, timeout=300)
        result["records"] = [first, second, third]
        return result

    from harnessrl.formats.rollout_dir import read_rollout

    result = asyncio.run(main())
    rollouts = out_dir / "run" / "rollouts"
    result["rollout_folders"] = {}
    result["attempt_folders"] = sorted(p.name for p in (rollouts / ".attempts").iterdir())
    for rdir in sorted(p for p in rollouts.iterdir() if not p.name.startswith(".")):
        record = rdir / "rollout.json"
        r = read_rollout(rdir) if record.is_file() else None
        result["rollout_folders"][rdir.name] = {
            "has_rollout_json": r is not None,
            "step": int(rdir.name.split("-")[0].removeprefix("s")),
            "node": r and r.node,
            "attempts": r and r.attempts,
            "status": r and r.status_label,
            "fault": r and r.fault,
            "reason": r and r.status_reason,
            "calls": [c.text for c in r.calls] if r else [],
            "lines": (rdir / "calls.jsonl").read_text().count("\n")
            if (rdir / "calls.jsonl").is_file()
            else 0,
        }
    return result


if __name__ == "__main__" and sys.argv[1:2] == ["drive"]:
    out = Path(sys.argv[2])
    (out / "out.json").write_text(json.dumps(drive(out, sys.argv[3], sys.argv[4])))
