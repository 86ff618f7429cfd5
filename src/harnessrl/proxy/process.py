"""A proxy process of this rollout worker, seen from the worker (`ProxyProcess`, a `SessionHost`).

    proxy = ProxyProcess(NodeSpec(engine_url=server.url, engine_token=server.token))
    await proxy.start()                                   # ~2-5 s: imports, tokenizer, warm-up
    opened = await proxy.open("r0", seed=7, journal=rollout_dir / "calls.jsonl")
    ...the rollout's sandbox reaches proxy.endpoint, its harness calls opened.server_url/r/<token>
    calls = await proxy.close("r0")                       # RecordedCalls, read from the journal once
    await proxy.stop()

The child is `python -m harnessrl.proxy.node` (its docstring has the control channel). Calls reach
this process through the rollout's folder: the child journals each call as it is recorded (one
flushed line; a call marked partial later gets a second); `close` reads it once
(`formats.calls.read_calls`, in a thread: a call's last line wins), in call order. Nothing but the
token and two counts crosses the pipe.

When the child dies (killed, out of memory), every session open on it ends at once
(`OpenSession.ended`, with `lost` saying how it died), and `close` returns what its journal holds:
the calls recorded before the death (a call that was generating went with it; the engine server
cancels its generation). The runner makes such a rollout the infrastructure's, never trained. The
next `open` starts a new child on the same port, so the sandbox forwarders pointing at it stay right.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

import harnessrl
from harnessrl.formats import FormatError
from harnessrl.formats.calls import read_calls
from harnessrl.proxy.node import NodeSpec
from harnessrl.proxy.session_host import OpenSession
from harnessrl.proxy.sessions import RecordedCalls
from harnessrl.types import ModelCall

log = logging.getLogger(__name__)

START_TIMEOUT_S = 300.0
"""How long a child may take to answer `ready` (imports and the tokenizer: 2-5 s on an idle machine)."""
ASK_TIMEOUT_S = 120.0


class ProxyLost(RuntimeError):
    """The proxy process is gone (it died, or never started)."""


class ProxyProcess:
    """One proxy process and the sessions open on it (module docstring)."""

    def __init__(self, spec: NodeSpec) -> None:
        self.spec = spec.model_copy(deep=True)
        self.url = ""
        self.proc: asyncio.subprocess.Process | None = None
        self.deaths = 0
        """Children that died on their own (not stopped)."""
        self._pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._ids = itertools.count(1)
        self._sessions: dict[str, tuple[OpenSession, Path]] = {}
        self._reader: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()
        self._stopping = False

    @property
    def endpoint(self) -> tuple[str, int]:
        """(host, port) a sandbox's forwarder connects to (the port is fixed at the first start)."""
        host = "127.0.0.1" if self.spec.host in ("0.0.0.0", "") else self.spec.host
        return host, self.spec.port

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.alive() and self.proc is not None else None

    @property
    def open_count(self) -> int:
        return len(self._sessions)

    def __contains__(self, rollout_id: str) -> bool:
        """Whether this process holds the open session of `rollout_id`."""
        return rollout_id in self._sessions

    def alive(self) -> bool:
        return (
            self.proc is not None
            and self.proc.returncode is None
            and self._reader is not None
            and not self._reader.done()
        )

    async def start(self) -> None:
        """Start the child unless it runs; RuntimeError with its reason when it cannot start."""
        async with self._lock:
            if not self.alive():
                await self._spawn()

    async def _spawn(self) -> None:
        root = str(Path(harnessrl.__file__).resolve().parents[1])  # this checkout's harnessrl, wherever
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p),
        }
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "harnessrl.proxy.node",
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, env=env, limit=2**20,
        )  # fmt: skip
        assert proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write(self.spec.model_dump_json().encode() + b"\n")
            await proc.stdin.drain()
            line = await asyncio.wait_for(proc.stdout.readline(), START_TIMEOUT_S)
            ready = json.loads(line) if line.strip() else {}
        except (OSError, TimeoutError, ValueError) as e:
            ready = {"error": f"{type(e).__name__}: {e}"}
        if not isinstance(ready, dict) or "ready" not in ready:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            code = await proc.wait()
            why = ready.get("error") if isinstance(ready, dict) else None
            raise ProxyLost(f"the proxy process did not start (exit code {code}): {why or 'no answer'}")
        self.proc, self.url = proc, str(ready["ready"])
        self.spec.port = int(self.url.rsplit(":", 1)[1])
        self._reader = asyncio.create_task(self._read(proc), name=f"proxy-process-{proc.pid}")

    async def _read(self, proc: asyncio.subprocess.Process) -> None:
        """Answers to their futures, events to their sessions; at the channel's end, the child's death."""
        assert proc.stdout is not None
        try:
            while line := await proc.stdout.readline():
                try:
                    msg = json.loads(line)
                except ValueError:
                    log.warning("proxy process %d wrote a line that is not JSON: %.200r", proc.pid, line)
                    continue
                if msg.get("event") == "overflow":
                    entry = self._sessions.get(str(msg.get("rollout_id")))
                    if entry is not None:
                        entry[0].ended.set()
                    continue
                future = self._pending.pop(msg.get("id"), None)
                if future is not None and not future.done():
                    future.set_result(msg)
        finally:
            code = await proc.wait()
            self._died(f"proxy process {proc.pid} exited with code {code}")

    def _died(self, why: str) -> None:
        if not self._stopping:
            self.deaths += 1
            log.warning("%s; %d open sessions end", why, len(self._sessions))
        for opened, _ in self._sessions.values():
            if opened.lost is None:
                opened.lost = why
                opened.ended.set()
        pending, self._pending = self._pending, {}
        for future in pending.values():
            if not future.done():
                future.set_exception(ProxyLost(why))

    async def _ask(self, op: str, **fields: Any) -> dict[str, Any]:
        """One command and its answer; ProxyLost when the child is gone, RuntimeError when it refused."""
        proc = self.proc
        if proc is None or proc.stdin is None or not self.alive():
            raise ProxyLost("the proxy process is not running")
        n = next(self._ids)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[n] = future
        try:
            proc.stdin.write(json.dumps({"id": n, "op": op, **fields}).encode() + b"\n")
            await proc.stdin.drain()
        except (ConnectionError, OSError) as e:
            self._pending.pop(n, None)
            raise ProxyLost(f"the proxy process's channel is closed: {e}") from None
        try:
            reply = await asyncio.wait_for(future, ASK_TIMEOUT_S)
        finally:
            self._pending.pop(n, None)
        if "error" in reply:
            raise RuntimeError(f"proxy process refused {op}: {reply['error']}")
        return reply

    async def open(
        self, rollout_id: str, seed: int | None = None, journal: Path | None = None
    ) -> OpenSession:
        if journal is None:
            raise ValueError(
                "a proxy process journals each session into its rollout's folder: give `journal`"
            )
        await self.start()
        reply = await self._ask("open", rollout_id=rollout_id, seed=seed, journal=str(journal))
        opened = OpenSession(rollout_id, str(reply["token"]), self.url)
        self._sessions[rollout_id] = (opened, journal)
        return opened

    async def close(self, rollout_id: str) -> RecordedCalls:
        """The session's calls, read from its journal (module docstring). Never raises for a dead child."""
        opened, journal = self._sessions.pop(rollout_id)
        expected, dropped = None, 0
        if opened.lost is None:
            try:
                reply = await self._ask("close", rollout_id=rollout_id)
                expected, dropped = int(reply["calls"]), int(reply["dropped"])
            except ProxyLost as e:
                opened.lost = opened.lost or str(e)
        calls = RecordedCalls(await asyncio.to_thread(read_journal, journal))
        if expected is not None and len(calls) != expected:
            log.warning("rollout %s: %d calls closed, %d in %s", rollout_id, expected, len(calls), journal)
            dropped += abs(expected - len(calls))
        calls.dropped = dropped
        return calls

    async def stats(self, reset: bool = False) -> dict[str, Any]:
        """The child's pid, process time, requests taken in, open sessions, and GC pauses since the last
        reset ([count, total s, longest s] per generation)."""
        return await self._ask("stats", reset=reset)

    async def stop(self) -> None:
        """End the child (closing its stdin: it stops serving and exits; killed after 15 s)."""
        self._stopping = True
        proc = self.proc
        if proc is not None and proc.returncode is None and proc.stdin is not None:
            proc.stdin.close()
            try:
                await asyncio.wait_for(proc.wait(), 15)
            except TimeoutError:
                proc.kill()
                await proc.wait()
        if self._reader is not None:
            with contextlib.suppress(Exception):
                await self._reader
        self._stopping = False


def read_journal(journal: Path) -> list[ModelCall]:
    """A session's calls from its journal, by index (none when it was never written or is unreadable:
    a child killed while appending may leave a cut line)."""
    try:
        calls = read_calls(journal)
    except FormatError as e:
        if journal.exists():
            log.warning("journal %s: %s", journal, e)
        return []
    return sorted(calls, key=lambda c: c.index)
