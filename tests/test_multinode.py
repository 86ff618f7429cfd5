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
from harnessrl.rollout.testing import SCORE_FROM_KEY, checked_task, curl_call

PY = sys.executable
FIRST = curl_call("first call", max_tokens=6, out="a.json")
SECOND = curl_call("second call", max_tokens=6, out="b.json")
VARIED = f"{FIRST} && {SECOND} && {SCORE_FROM_KEY}"
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
    check_network(got)
    check_step0(got)
    check_step1_killed_proxy(got)
    check_step2_killed_node(got)
    # Artifacts written on either node landed in the one shared run folder.
    folders = got["rollout_folders"]
    assert len(folders) == 12 and all(f["has_rollout_json"] for f in folders.values())
    assert sorted(f["attempts"] for f in folders.values()) == [1] * 10 + [2] * 2
    retried = sorted(name for name, f in folders.items() if f["attempts"] == 2)
    assert got["attempt_folders"] == [f"{name}.1" for name in retried]


def check_network(got: dict[str, Any]) -> None:
    """The engine server binds the head's address on the cluster's network and, from the worker node,
    answers nothing without the run's token; no proxy listens there for the worker's sandboxes. A
    token of one node's session is refused by the other node's proxy, taken by its own."""
    assert got["engine_host"] == HEAD_IP
    assert got["from_worker_node"] == {"GET /v1/engine": 401, "POST /v1/engine/generate": 401,
                                       "head proxy": "refused"}  # fmt: skip
    assert got["tokens"] == {"worker token at head": 401, "head token at head": 200,
                             "head token at worker": 401, "worker token at worker": 200}  # fmt: skip


def check_step0(got: dict[str, Any]) -> None:
    """Two rollouts on each node, every one trained, each call recorded once. Each node's proxy served
    exactly its own sandboxes' 4 requests, and the engine saw each proxy call from its own node: the
    sandboxes' requests never crossed the link, only the proxies' engine calls did."""
    first = got["records"][0]
    assert first["rollouts"] == 4 and first["status"] == {"ok": 4}
    assert first["outcomes"]["workers"]["by_node"] == {HEAD_IP: 2, WORKER_IP: 2}
    assert first["trained"] is True and first["trained_rollouts"] == 4 and first["outcomes"]["calls"] == 8
    assert got["proxy_requests"] == {HEAD_IP: 4, WORKER_IP: 4}
    assert got["engine_calls_by_peer"] == {HEAD_IP: 4, WORKER_IP: 4}
    step0 = [f for f in got["rollout_folders"].values() if f["step"] == 0]
    assert [(f["calls"], f["lines"]) for f in step0] == [(["hi there", "hi there"], 2)] * 4


def check_step1_killed_proxy(got: dict[str, Any]) -> None:
    """The worker node's proxy process was killed with both its rollouts waiting on their second call:
    they ended as the infrastructure's, their first calls kept, never trained; their waiting
    generations were cancelled; the head's two finished (each group had one rollout on each node:
    the head's are left alone in theirs, too small to train)."""
    second = got["records"][1]
    assert got["killed_proxy"] > 0 and got["engine_cancelled"] == 2
    assert second["status"] == {"engine_error": 2, "filtered:small_group": 2}, second["status"]
    assert second["failures_trained"] == {}
    assert second["outcomes"]["workers"]["by_node"] == {HEAD_IP: 2, WORKER_IP: 2}
    killed = [f for f in got["rollout_folders"].values() if f["step"] == 1 and f["status"] == "engine_error"]
    assert [(f["node"], f["fault"], f["calls"]) for f in killed] == [(WORKER_IP, "infra", ["hi there"])] * 2
    assert all(f["reason"].startswith("proxy process died (proxy process ") for f in killed)


def check_step2_killed_node(got: dict[str, Any]) -> None:
    """The worker node's raylet was killed with all four rollouts waiting (its proxy process had come
    back for them); its two ran again on the head, the step trained on four, each counted once."""
    third = got["records"][2]
    assert got["killed_raylet"] > 0 and got["proxy_restarted"] is True
    assert third["rollouts"] == 4 and third["status"] == {"ok": 4}, third["status"]
    workers = {"by_node": {HEAD_IP: 4}, "retried": 2, "lost": 0, "artifacts_missing": 0}
    assert third["outcomes"]["workers"] == workers
    assert third["trained"] is True and third["trained_rollouts"] == 4
    assert third["outcomes"]["calls"] == 8  # the calls of the lost tries are not counted again


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


def gated_engine() -> Any:
    """A scripted engine (real log-probs of a tiny Qwen3) answering "hi there"; while its `gate` is
    shut, every second call of a rollout waits before generating (`waiting` counts them)."""
    from harnessrl.chat.format import ChatFormat
    from harnessrl.engines.models import load_model, load_tokenizer
    from harnessrl.engines.scripted import Script, ScriptedEngine
    from harnessrl.protocols import GenerationResult, SamplingParams

    class Gated(ScriptedEngine):
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

    return Gated()


def train_loop(out_dir: Path, address: str, engine: Any) -> Any:
    """Three steps of 2 tasks x 2 rollouts through the `shell` harness, on the Ray cluster."""
    from harnessrl.config import Config
    from harnessrl.train.build import build_trainer
    from harnessrl.train.loop import TrainLoop

    tasks = [checked_task(f"t{i}", "write a score") for i in range(2)]
    ray = {"address": address, "workers": 2, "worker_cpus": 1, "retries": 1, "max_restarts": 0}
    cfg = Config.model_validate(
        {
            "engine": {"type": "scripted", "model": "tiny-qwen3", "sampling": {"max_tokens": 6}},
            "rollout": {"concurrency": 2, "timeout_s": 300.0, "backend": "ray", "ray": ray},
            "train": {
                "lr": 1e-2, "steps": 3, "seed": 3, "out_dir": str(out_dir / "run"), "tasks_per_step": 2,
                "group_size": 2, "harnesses": ["shell"], "harness_options": {"shell": {"command": VARIED}},
            },
        }
    )  # fmt: skip
    loop = TrainLoop(cfg, tasks, build_trainer(cfg), engine, echo=lambda line: print(line, flush=True))
    loop.out_dir.mkdir(parents=True)
    return loop


async def until(what: Any, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while not what() and time.monotonic() < deadline:
        await asyncio.sleep(0.1)


class Steps:
    """The three steps of the test (module docstring), on a started stack; what they saw in `result`."""

    def __init__(self, loop: Any, engine: Any, stack: Any, worker_ns: str) -> None:
        self.loop, self.engine, self.worker_ns = loop, engine, worker_ns
        self.runner, self.server = stack.runner, stack.engine_server
        self.by_node: dict[str, Any] = {}
        self.result: dict[str, Any] = {"engine_host": self.server.host, "records": []}

    async def start(self) -> None:
        nodes = [await w.node.remote() for w in self.runner.workers]
        self.by_node = dict(zip(nodes, self.runner.workers, strict=True))
        head_port = (await self.by_node[HEAD_IP].__ray_call__.remote(lambda w: w.proxy.endpoint))[1]
        engine_url = f"http://{HEAD_IP}:{self.server.port}"
        self.result["from_worker_node"] = await asyncio.to_thread(probe, self.worker_ns, [
            ("GET /v1/engine", "GET", engine_url + "/v1/engine", None),
            ("POST /v1/engine/generate", "POST", engine_url + "/v1/engine/generate", None),
            ("head proxy", "GET", f"http://{HEAD_IP}:{head_port}/", None),
        ])  # fmt: skip
        await self.requests()  # reset the counts

    async def requests(self) -> dict[str, int]:
        """Requests each node's proxy took in since the last ask."""
        stats = {n: await w.proxy_stats.remote(reset=True) for n, w in self.by_node.items()}
        return {n: s["requests"] for n, s in stats.items()}

    async def step0(self) -> None:
        self.result["records"].append(await self.loop.run_step(self.runner, 0))
        self.result["proxy_requests"] = await self.requests()
        self.result["engine_calls_by_peer"] = dict(self.server.served)

    async def step1_kill_proxy(self) -> None:
        self.engine.gate = asyncio.Event()
        step = asyncio.create_task(self.loop.run_step(self.runner, 1))
        await until(lambda: self.engine.waiting >= 4 or step.done())
        self.result["tokens"] = await crossed_tokens(self.by_node, self.worker_ns)
        killed = await self.by_node[WORKER_IP].proxy_pid.remote()
        os.kill(killed, signal.SIGKILL)
        self.result["killed_proxy"] = killed
        await until(lambda: self.server.cancelled >= 2 or step.done(), timeout=60)
        self.result["engine_cancelled"] = self.server.cancelled
        self.engine.gate.set()
        self.result["records"].append(await asyncio.wait_for(step, timeout=300))

    async def step2_kill_raylet(self) -> None:
        self.engine.gate, self.engine.waiting = asyncio.Event(), 0
        step = asyncio.create_task(self.loop.run_step(self.runner, 2))
        await until(lambda: self.engine.waiting >= 4 or step.done())
        killed = self.result["killed_proxy"]
        self.result["proxy_restarted"] = await self.by_node[WORKER_IP].proxy_pid.remote() not in (
            None,
            killed,
        )
        self.result["killed_raylet"] = kill_raylet(self.worker_ns)
        await until(lambda: self.engine.waiting >= 6 or step.done())  # the two that run again
        self.engine.gate.set()
        self.result["records"].append(await asyncio.wait_for(step, timeout=300))


def folders(rollouts: Path) -> dict[str, Any]:
    """What each rollout folder of the run holds."""
    from harnessrl.formats.rollout_dir import read_rollout

    out = {}
    for rdir in sorted(p for p in rollouts.iterdir() if not p.name.startswith(".")):
        r = read_rollout(rdir) if (rdir / "rollout.json").is_file() else None
        calls = rdir / "calls.jsonl"
        out[rdir.name] = {
            "has_rollout_json": r is not None,
            "step": int(rdir.name.split("-")[0].removeprefix("s")),
            "node": r and r.node,
            "attempts": r and r.attempts,
            "status": r and r.status_label,
            "fault": r and r.fault,
            "reason": r and r.status_reason,
            "calls": [c.text for c in r.calls] if r else [],
            "lines": calls.read_text().count("\n") if calls.is_file() else 0,
        }
    return out


def drive(out_dir: Path, worker_ns: str, address: str) -> dict[str, Any]:
    from harnessrl.rollout.ray_backend import RayRolloutRunner
    from harnessrl.rollout.session import RolloutStack

    engine = gated_engine()
    loop = train_loop(out_dir, address, engine)

    async def main() -> dict[str, Any]:
        async with RolloutStack.from_config(loop.rollout_config(), loop.tasks, engine=engine) as stack:
            assert isinstance(stack.runner, RayRolloutRunner) and stack.engine_server is not None
            steps = Steps(loop, engine, stack, worker_ns)
            await steps.start()
            await steps.step0()
            await steps.step1_kill_proxy()
            await steps.step2_kill_raylet()
        return steps.result

    result = asyncio.run(main())
    rollouts = out_dir / "run" / "rollouts"
    result["rollout_folders"] = folders(rollouts)
    result["attempt_folders"] = sorted(p.name for p in (rollouts / ".attempts").iterdir())
    return result


if __name__ == "__main__" and sys.argv[1:2] == ["drive"]:
    out = Path(sys.argv[2])
    (out / "out.json").write_text(json.dumps(drive(out, sys.argv[3], sys.argv[4])))
