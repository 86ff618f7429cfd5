"""1 vs 2 proxy processes on the same traffic (issue 33): what spreading sessions over processes buys.

The conversations of `proxy_traffic.py` (Claude Code's system prompt and tools padded to ~20k tokens,
`--calls` (30) calls, 0.5-4 KB tool results), Anthropic dialect, sent to N proxy processes: the real
thing (`proxy.process.ProxyProcess`, sessions journaled into a temporary folder, the engine reached
over HTTP with the run's token), all calling one engine server in a child process
(`engines.serve.EngineServer` over a fixed-answer engine that costs nothing, so what is measured is
the proxy and the engine hop). Sessions go to the processes round robin. For each process count,
in one run:

- 1 session: `--repeat` conversations in a row, the processes' CPU taken around each call (the cost of
  asking, measured, subtracted): CPU per call, all calls and the spliced ones (call 0 renders ~20k
  tokens from scratch).
- `--sessions` (64) sessions with think time (`--think-ms`, jittered): added latency p50/p99 over the
  engine called directly (`RemoteEngine` on the same prompts' ids from this process, same sessions and
  pauses), CPU per call, calls per CPU second, and the garbage collector: the longest pause in any
  proxy process, full collections.
- the same sessions without think time: calls per wall second at saturation; its ratio to one
  process is the scaling.

Fresh tool results at every level (the tokenizer's piece cache cannot help). This process (the
client) and the engine server share the machine's cores with the proxies: read the scaling with the
load that `uptime` reports.

    .venv/bin/python benchmarks/proxy_traffic.py --processes 1 2      # ~5 minutes on two loaded cores
    .venv/bin/python benchmarks/proxy_processes.py --processes 1 2 --sessions 64 --calls 30

Goals (issue 33): 2 processes >= 1.7x the calls/s of one on 2 cores; added p99 at 64 sessions <= 20
ms; longest GC pause in a proxy process <= 20 ms; CPU per call <= 2 ms at 1 session.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from proxy_overhead import percentile, read_response, think
from proxy_traffic import COMMAND, body, claude_code_shape, timed_sessions, tool_result

ROUTE = "/v1/messages?beta=true"


class FixedEngine:
    """Answers every prompt with the one Bash tool call, at no cost (the proxy is what is measured)."""

    def __init__(self) -> None:
        from harnessrl.chat.format import ChatFormat
        from harnessrl.chat.tokenizers import qwen3_tokenizer
        from harnessrl.types import ChatMessage, ToolCall

        self.fmt = ChatFormat(qwen3_tokenizer())
        message = ChatMessage(role="assistant", tool_calls=[ToolCall(name="Bash", arguments=COMMAND)])
        self.output = self.fmt.render_assistant(message)
        self.model_id, self.max_context, self.weights_version = "fixed", None, 0

    @property
    def tokenizer(self) -> Any:
        return self.fmt.tokenizer

    async def generate(self, prompt_ids: list[int], sampling: Any) -> Any:
        from harnessrl.protocols import GenerationResult

        return GenerationResult(list(self.output), [0.0] * len(self.output), "stop", {"weights_version": 0})


async def serve_engine() -> None:
    """The engine server child: prints its URL and token, serves until stdin closes."""
    from harnessrl.engines.serve import EngineServer

    async with EngineServer(FixedEngine()) as server:  # type: ignore[arg-type]
        print(json.dumps({"url": server.url, "token": server.token}), flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)


class Traffic:
    """The conversations: bodies per session, built ahead of each level (never on the clock)."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.system, self.tools, self.corpus = claude_code_shape(args.pad_chars)

    def bodies(self, session: int) -> list[bytes]:
        results = [tool_result(self.corpus, session, c) for c in range(self.args.calls)]
        return [
            json.dumps(body("anthropic", self.system, self.tools, results[:k], session)).encode()
            for k in range(self.args.calls)
        ]

    def prompts(self) -> list[list[int]]:
        """Session 0's prompts as ids (the direct baseline's)."""
        from harnessrl.chat.format import ChatFormat
        from harnessrl.chat.tokenizers import qwen3_tokenizer
        from harnessrl.proxy.dialects import AnthropicDialect

        fmt = ChatFormat(qwen3_tokenizer())
        reqs = [AnthropicDialect().parse(json.loads(b)) for b in self.bodies(0)]
        return [fmt.render(r.messages, r.tools) for r in reqs]


class Conn:
    """One harness's kept-alive connection to its proxy."""

    def __init__(self, url: str, token: str) -> None:
        self.url, self.token = url, token
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def call(self, payload: bytes) -> float:
        """One call; its latency in seconds."""
        if self.writer is None:
            host, port = self.url.removeprefix("http://").split(":")
            self.reader, self.writer = await asyncio.open_connection(host, int(port))
            self.writer.get_extra_info("socket").setsockopt(6, 1, 1)  # TCP_NODELAY
        assert self.reader is not None
        head = f"POST /r/{self.token}{ROUTE} HTTP/1.1\r\nhost: b\r\ncontent-type: application/json\r\n"
        start = time.perf_counter()
        self.writer.write(f"{head}content-length: {len(payload)}\r\n\r\n".encode() + payload)
        received = await read_response(self.reader)
        took = time.perf_counter() - start
        if b"message_stop" not in received:
            raise RuntimeError(f"unexpected response: {received[:300]!r}")
        return took

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


async def client(conn: Conn, payloads: list[bytes], pause: float, session: int, out: list[float]) -> None:
    """One harness: its calls one after another, with its think time between them."""
    for call, payload in enumerate(payloads):
        await think(pause, session, call)
        out.append(await conn.call(payload))
    conn.close()


async def direct(url: str, token: str, prompts: list[list[int]], n: int, pause: float) -> list[float]:
    """The baseline: the engine server called directly on pre-rendered ids, n sessions."""
    from harnessrl.engines.remote import RemoteEngine
    from harnessrl.protocols import SamplingParams

    engine = await RemoteEngine.connect(url, token)
    out = await timed_sessions(engine, SamplingParams(max_tokens=4096), prompts, n, pause)
    await engine.close()
    return out


class Level:
    """One level's traffic over the proxies, and what their stats say it cost."""

    def __init__(self, proxies: list[Any], traffic: Traffic, folder: Path) -> None:
        self.proxies, self.traffic, self.folder = proxies, traffic, folder

    async def run(self, sessions: list[int], pause: float) -> dict[str, Any]:
        payloads = {s: self.traffic.bodies(s) for s in sessions}
        before = [await p.stats(reset=True) for p in self.proxies]
        where = {s: self.proxies[i % len(self.proxies)] for i, s in enumerate(sessions)}
        opened = {
            s: await where[s].open(f"s{s}", journal=self.folder / f"s{s}" / "calls.jsonl") for s in sessions
        }
        latencies: list[float] = []
        t0 = time.perf_counter()
        conns = {s: Conn(where[s].url, opened[s].token) for s in sessions}
        await asyncio.gather(*(client(conns[s], payloads[s], pause, s, latencies) for s in sessions))
        wall = time.perf_counter() - t0
        after = [await p.stats(reset=True) for p in self.proxies]
        for s in sessions:
            await where[s].close(f"s{s}")
        cpu = sum(a["cpu_s"] - b["cpu_s"] for a, b in zip(after, before, strict=True))
        calls = len(latencies)
        return {
            "calls": calls,
            "wall_s": wall,
            "cpu_ms": cpu * 1000 / calls,
            "calls_per_cpu_s": calls / cpu,
            "calls_per_s": calls / wall,
            "p50": percentile(latencies, 0.5) * 1000,
            "p99": percentile(latencies, 0.99) * 1000,
            "gc_max_ms": max(g[2] for a in after for g in a["gc"]) * 1000,
            "gc_max_cpu_ms": max(g[4] for a in after for g in a["gc"]) * 1000,
            "gc_full": sum(a["gc"][2][0] for a in after),
            "gc_by_generation": [
                [sum(a["gc"][g][0] for a in after), round(max(a["gc"][g][4] for a in after) * 1000, 1)]
                for g in range(3)
            ],
            "gc_cpu_ms_per_call": sum(g[3] for a in after for g in a["gc"]) * 1000 / calls,
        }

    async def one_session(self, repeat: int, base: int) -> dict[str, Any]:
        """`repeat` conversations in a row through the first proxy, its CPU taken around each call."""
        proxy = self.proxies[0]
        asks = [(await proxy.stats())["cpu_s"] for _ in range(21)]
        ask_cost = sorted(b - a for a, b in itertools.pairwise(asks))[10]
        per_call: list[float] = []
        for rep in range(repeat):
            s = base + rep
            opened = await proxy.open(f"s{s}", journal=self.folder / f"s{s}" / "calls.jsonl")
            conn = Conn(proxy.url, opened.token)
            for payload in self.traffic.bodies(s):
                cpu0 = (await proxy.stats())["cpu_s"]
                await conn.call(payload)
                per_call.append(((await proxy.stats())["cpu_s"] - cpu0 - ask_cost) * 1000)
            conn.close()
            await proxy.close(f"s{s}")
        calls = self.traffic.args.calls
        spliced = [c for i, c in enumerate(per_call) if i % calls]
        return {
            "cpu_ms": statistics.fmean(per_call),
            "spliced_ms": statistics.median(spliced),
            "calls": len(per_call),
        }


async def measure(
    args: argparse.Namespace, n: int, where: dict[str, str], traffic: Traffic, tmp: Path
) -> Any:
    """The levels with n proxy processes (module docstring), fresh processes and fresh sessions, and the
    direct baseline right before them (the machine's load moves: each row has its own)."""
    from harnessrl.proxy.node import NodeSpec
    from harnessrl.proxy.process import ProxyProcess

    pause = args.think_ms / 1000
    base = await direct(where["url"], where["token"], traffic.prompts(), args.sessions, pause)
    spec = NodeSpec(engine_url=where["url"], engine_token=where["token"])
    proxies = [ProxyProcess(spec) for _ in range(n)]
    await asyncio.gather(*(p.start() for p in proxies))
    level, first = Level(proxies, traffic, tmp), (n + 10 * len(list(tmp.iterdir()))) * 1000
    try:
        await level.run([900_000 + first + i for i in range(2)], pause)  # warm up
        frozen = [(await p.stats())["frozen"] for p in proxies]
        row = {"one": await level.one_session(args.repeat, 800_000 + first)}
        row["busy"] = await level.run([200_000 + first + i for i in range(args.sessions)], pause)
        row["saturated"] = await level.run([400_000 + first + i for i in range(args.sessions)], 0.0)
        await asyncio.sleep(2)  # the last interval's survivors are frozen too
        row["frozen"] = (frozen, [(await p.stats())["frozen"] for p in proxies])
    finally:
        await asyncio.gather(*(p.stop() for p in proxies))
    row["direct_p50"], row["direct_p99"] = percentile(base, 0.5) * 1000, percentile(base, 0.99) * 1000
    row["load"] = os.getloadavg()[0]
    return row


async def run(args: argparse.Namespace) -> list[tuple[int, dict[str, Any]]]:
    """`--rounds` rounds, each measuring every process count (the order reversed every other round),
    then the median of each figure per process count."""
    engine = subprocess.Popen(
        [sys.executable, __file__, "--serve-engine"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert engine.stdout is not None and engine.stdin is not None
    where = json.loads(engine.stdout.readline())
    traffic = Traffic(args)
    rows: list[tuple[int, dict[str, Any]]] = []
    try:
        with tempfile.TemporaryDirectory(prefix="hrl-bench-") as tmp:
            for r in range(args.rounds):
                for n in args.processes if r % 2 == 0 else list(reversed(args.processes)):
                    folder = Path(tmp) / f"round{r}-{n}"
                    folder.mkdir()
                    rows.append((n, await measure(args, n, where, traffic, folder)))
                    print_rows(args, rows, f"round {r + 1} of {args.rounds}, as measured")
    finally:
        engine.stdin.close()
        engine.wait(timeout=60)
    print_rows(args, [(n, median_row([r for m, r in rows if m == n])) for n in args.processes], "median")
    return rows


def median_row(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The median of every number of `rows` (same keys), per key."""
    out: dict[str, Any] = {}
    for key, value in rows[0].items():
        if isinstance(value, dict):
            out[key] = median_row([r[key] for r in rows])
        elif isinstance(value, int | float):
            out[key] = statistics.median(r[key] for r in rows)
        else:
            out[key] = value
    return out


def print_rows(args: argparse.Namespace, rows: list[tuple[int, dict[str, Any]]], title: str) -> None:
    first = next(r for n, r in rows if n == min(args.processes))["saturated"]["calls_per_s"]
    what = (
        f"{args.sessions} sessions of {args.calls} real-length calls (Anthropic), think {args.think_ms:g} ms"
    )
    print(f"\nproxy processes, {what}; {title}:")
    head = f"{'procs':>5} | {'CPU/call 1 sess':>15} {'spliced':>7} | {'CPU/call':>8} {'calls/CPU-s':>11} |"
    head += f" {'added p50':>9} {'p99':>7} | {'max GC CPU':>10} {'wall':>7} {'full':>4} {'GC CPU/call':>11} |"
    head += f" {'calls/s sat.':>12} {'vs 1':>5} | {'load':>4}"
    print(head + "\n" + "-" * len(head))
    for n, r in rows:
        one, busy, sat = r["one"], r["busy"], r["saturated"]
        a50, a99 = busy["p50"] - r["direct_p50"], busy["p99"] - r["direct_p99"]
        print(
            f"{n:>5} | {one['cpu_ms']:>13.2f}ms {one['spliced_ms']:>5.2f}ms | {busy['cpu_ms']:>6.2f}ms"
            f" {busy['calls_per_cpu_s']:>11.0f} | {a50:>7.2f}ms {a99:>5.1f}ms |"
            f" {busy['gc_max_cpu_ms']:>8.1f}ms"
            f" {busy['gc_max_ms']:>5.1f}ms {busy['gc_full']:>4} {busy['gc_cpu_ms_per_call']:>9.2f}ms |"
            f" {sat['calls_per_s']:>12.1f} {sat['calls_per_s'] / first:>4.2f}x | {r['load']:>4.1f}",
            flush=True,
        )
    if title == "median":
        print(
            "CPU: the proxy processes' process time (user + system) per call; max GC CPU: the longest"
            " collection in any proxy process, its own CPU time (wall: the longest in wall time);"
            " calls/s sat.: calls per wall second with no think time (this client and the engine server"
            " share the cores); load: the 1-minute load average after the row;"
            f" now {' '.join(f'{x:.1f}' for x in os.getloadavg())}"
            f" on {os.cpu_count()} cores"
        )
        return
    n, r = rows[-1]
    print(f"  collections [count, longest CPU ms] by generation: {r['busy']['gc_by_generation']}")
    print(f"  frozen objects after warm-up {r['frozen'][0]}, after every session closed {r['frozen'][1]}")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--processes", type=int, nargs="+", default=[1, 2])
    p.add_argument("--sessions", type=int, default=64)
    p.add_argument("--calls", type=int, default=30, help="calls per conversation")
    p.add_argument("--pad-chars", type=int, default=80_000, help="system prompt + tools, in characters")
    p.add_argument("--think-ms", type=float, default=500.0, help="mean pause between a session's calls")
    p.add_argument("--repeat", type=int, default=3, help="conversations in a row at 1 session")
    p.add_argument("--rounds", type=int, default=2, help="rounds over the process counts (median reported)")
    p.add_argument("--serve-engine", action="store_true", help=argparse.SUPPRESS)
    return p


def main() -> None:
    args = parser().parse_args()
    if args.serve_engine:
        asyncio.run(serve_engine())
        return
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
