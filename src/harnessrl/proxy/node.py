"""A proxy process: the proxy of one rollout worker, in a process of its own on the worker's machine.

    python -m harnessrl.proxy.node      # started by `proxy.process.ProxyProcess`, never by hand

It is the proxy of this package, unchanged (`ProxyServer` over `default_deps`): sessions, splicing,
retry replay, capture, the journal and the failure policy are the ones the driver's proxy has. What
differs is around it: the engine is the driver's, reached over HTTP (`engines.remote.RemoteEngine`,
with the run's token), the tokenizer is loaded here from the engine's spec (its vocabulary digest
must match), each session journals its calls into its rollout's folder (the parent reads them from
there at close, or after this process died: the appended lines, a call's last line winning), and
the heap is this process's own, so it can be managed for short pauses (`HeapKeeper`).

Control channel: the first line on stdin is the `NodeSpec` (JSON; the engine token travels here,
never in argv). Then one JSON command per line on stdin, one answer per line on the original stdout
(`sys.stdout` is pointed at stderr, so nothing else writes there):

    {"id": 1, "op": "open", "rollout_id": "r0", "seed": 7, "journal": "/run/rollouts/r0/calls.jsonl"}
        -> {"id": 1, "token": "..."}
    {"id": 2, "op": "close", "rollout_id": "r0"}        -> {"id": 2, "calls": 3, "dropped": 0}
    {"id": 3, "op": "stats", "reset": true}             -> {"id": 3, "pid": ..., "cpu_s": ..., "gc": ...}

and, unasked, `{"event": "overflow", "rollout_id": "r0"}` at a call of that session that overflowed
the context. The first line it writes is `{"ready": "http://127.0.0.1:PORT", "pid": N}` (or
`{"error": "..."}`). End of stdin (the parent closed it, or died) stops it.
"""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from harnessrl.engines.config import SamplingConfig
from harnessrl.proxy.config import ProxyConfig
from harnessrl.proxy.session_host import OVERFLOW_TAG

log = logging.getLogger(__name__)


class NodeSpec(BaseModel):
    """What a proxy process needs: where the engine is, and the proxy's own settings."""

    engine_url: str
    """The driver's engine server (`engines.serve.EngineServer`)."""
    engine_token: str
    """The run's secret for the engine server."""
    host: str = "127.0.0.1"
    """Interface the proxy listens on (its sandboxes' forwarders are on this machine)."""
    port: int = 0
    """Its port (0 = a free one; a restarted process binds the port the first one got)."""
    proxy: ProxyConfig = Field(default_factory=ProxyConfig)
    """Limits, timeouts, images: as for the proxy in process."""
    sampling: SamplingConfig = Field(default_factory=SamplingConfig)
    """Temperature, top-p and the output cap of every call."""
    enable_thinking: bool = False
    """The chat format's thinking switch (`ChatFormat(enable_thinking=...)`)."""


class HeapKeeper:
    """The proxy process's garbage collector: short pauses, timed.

    A full collection walks every tracked object not frozen, and 64 open 30-call Claude Code sessions
    hold ~75k of them plus each call's prompt ids: a 655 ms pause at 64 sessions on two loaded cores,
    which every call in flight waits out. So every `interval_s` what is alive is frozen (`gc.freeze`,
    O(1)): the automatic collections then walk only what the last interval allocated, and a full one
    is rare and short. A frozen object is still freed by reference counting when its session closes;
    only cyclic garbage among frozen objects would be kept, and a session over HTTP leaves none
    (measured: 0 unreachable objects after whole sessions; stats report the frozen count, which after
    the first calls' one-time objects grows only by the tokenizer's piece cache, one list per new
    text piece, bounded at 8M characters). What is left are the young
    collections, which walk the containers of the calls in flight (prompt-id lists of ~30k ints
    among them). `gc.callbacks` time every collection, wall and CPU: per generation, count, total
    and longest."""

    def __init__(self, interval_s: float = 1.0) -> None:
        self.interval_s = interval_s
        self.pauses: list[list[tuple[float, float]]] = [[], [], []]
        """Per generation: (wall s, CPU s of the collecting thread) of each collection."""
        self._t0 = (0.0, 0.0)
        gc.callbacks.append(self._on_gc)

    async def run(self) -> None:
        while True:
            await asyncio.sleep(self.interval_s)
            gc.freeze()

    def _on_gc(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._t0 = (time.perf_counter(), time.thread_time())
        else:
            wall, cpu = time.perf_counter() - self._t0[0], time.thread_time() - self._t0[1]
            self.pauses[info["generation"]].append((wall, cpu))

    def summary(self, reset: bool) -> list[list[float]]:
        """Per generation since the last reset: [count, total wall s, longest wall s, total CPU s,
        longest CPU s] (CPU: the collector's own time, which a loaded machine does not stretch)."""
        out = []
        for p in self.pauses:
            walls, cpus = [w for w, _ in p], [c for _, c in p]
            out.append([len(p), sum(walls), max(walls, default=0.0), sum(cpus), max(cpus, default=0.0)])
        if reset:
            for p in self.pauses:
                p.clear()
        return out


class Node:
    """The running proxy and the control commands on its sessions."""

    def __init__(self, deps: Any, server: Any, write: Any) -> None:
        self.deps, self.server, self.write = deps, server, write
        self.heap = HeapKeeper()

    def command(self, msg: dict[str, Any]) -> dict[str, Any]:
        op, sessions = msg.get("op"), self.deps.sessions
        if op == "open":
            rollout_id = str(msg["rollout_id"])
            journal = Path(msg["journal"]) if msg.get("journal") else None
            info = sessions.open(rollout_id, seed=msg.get("seed"), journal=journal)
            sessions.watch(
                rollout_id, lambda c: self._overflow(rollout_id) if OVERFLOW_TAG in c.tags else None
            )
            return {"token": info.token}
        if op == "close":
            calls = sessions.close(str(msg["rollout_id"]), rewrite=False)  # the parent reads and sorts
            return {"calls": len(calls), "dropped": calls.dropped}
        if op == "stats":
            return {
                "pid": os.getpid(),
                "cpu_s": time.process_time(),
                "requests": self.server.requests,
                "sessions": sessions.open_count,
                "gc": self.heap.summary(bool(msg.get("reset"))),
                "frozen": gc.get_freeze_count(),
            }
        raise ValueError(f"unknown command {op!r}")

    def _overflow(self, rollout_id: str) -> None:
        self.write({"event": "overflow", "rollout_id": rollout_id})


async def serve(spec: NodeSpec, commands: asyncio.StreamReader, write: Any) -> None:
    """Build the proxy over the remote engine, serve until stdin ends (module docstring)."""
    from harnessrl.chat.format import ChatFormat
    from harnessrl.engines.remote import RemoteEngine
    from harnessrl.proxy.deps import default_deps
    from harnessrl.proxy.server import ProxyServer
    from harnessrl.proxy.sessions import SessionStore

    engine = await RemoteEngine.connect(spec.engine_url, spec.engine_token)
    fmt = ChatFormat(engine.tokenizer, enable_thinking=spec.enable_thinking)
    deps = default_deps(engine, fmt, SessionStore(None), config=spec.proxy, sampling=spec.sampling)
    if deps.tokenizer_digest != engine.info.tokenizer_digest:
        raise RuntimeError(
            f"tokenizer {engine.info.tokenizer!r} loads here with vocabulary digest {deps.tokenizer_digest},"
            f" the engine's is {engine.info.tokenizer_digest}"
        )
    async with ProxyServer(deps, spec.host, spec.port, freeze_heap=True) as server:
        node = Node(deps, server, write)
        keeper = asyncio.ensure_future(node.heap.run())
        write({"ready": server.url, "pid": os.getpid()})
        while line := await commands.readline():
            msg: dict[str, Any] = {}
            try:
                msg = json.loads(line)
                answer = node.command(msg)
            except Exception as e:  # a bad command is answered, never the end of the proxy
                answer = {"error": f"{type(e).__name__}: {e}"}
            write({"id": msg.get("id") if isinstance(msg, dict) else None, **answer})
        keeper.cancel()
    await engine.close()


async def main() -> None:
    channel = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    os.dup2(2, 1)  # prints and stray output go to stderr, never into the channel

    def write(obj: dict[str, Any]) -> None:
        channel.write(json.dumps(obj) + "\n")

    loop = asyncio.get_running_loop()
    commands = asyncio.StreamReader(limit=2**20)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(commands), sys.stdin)
    try:
        spec = NodeSpec.model_validate_json(await commands.readline())
        await serve(spec, commands, write)
    except Exception as e:
        log.exception("proxy process failed")
        write({"error": f"{type(e).__name__}: {e}"})
        raise SystemExit(1) from None


if __name__ == "__main__":
    logging.basicConfig(
        level=logging.WARNING, format=f"proxy[{os.getpid()}] %(levelname)s %(name)s: %(message)s"
    )
    from harnessrl.proxy.server import run

    run(main())
