"""Latency the proxy adds to a streaming model call, at 1, 64 and 256 concurrent sessions.

Baseline: the scripted engine's `generate` awaited directly, in-process, on prompt ids rendered ahead
of time (the model costs ~0, so this is nearly pure asyncio overhead). Proxy: the same engine behind a
live proxy (uvicorn, in a child process so that it has its own interpreter), called over HTTP/1.1
keep-alive connections by a minimal raw-socket client, one connection and one session per concurrent
harness; a call's latency runs from writing the request to reading the final SSE chunk. Every call
continues its session's conversation with a new user message (so nothing is a retry replay), with a
~1 KB system prompt and three tools, so the proxy does its real work: parse, splice the recorded ids and
render the new turn through the Qwen3 chat template, generate, parse the output, record, format the
events. A session starts a new conversation every 16 calls; `--fresh` makes every call a new one-message
conversation (rendered from scratch, no splice).

Sessions pause between calls like a harness running tools (`--think-ms`, mean 500 ms, jittered; none
at 1 session). Without pauses (`--think-ms 0`) the engine costs nothing, so N sessions simply queue
behind each other and latency measures throughput (~N x the proxy's CPU per call), not added latency.
The last column is the proxy process's own CPU time per call, the number that decides capacity: one
proxy process (one event loop) serves about 1 / (CPU per call) calls per second. The proxy runs on the
default asyncio loop, as inside the rollout runner; `--loop uvloop` runs it on uvloop, as `harnessrl
serve` does (`harnessrl.proxy.server.run`).

    .venv/bin/python benchmarks/proxy_overhead.py                 # ~1 minute on two cores
    .venv/bin/python benchmarks/proxy_overhead.py --sessions 1 64 --calls 400
    .venv/bin/python benchmarks/proxy_overhead.py --loop uvloop

Goal (issue 3): added p50 <= 2 ms and added p99 <= 10 ms at 64 sessions on two cores.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import subprocess
import sys
import time
from typing import Any

SYSTEM = "You are a careful coding agent. " * 32
TOOLS = [
    {
        "name": name,
        "description": f"The {name} tool.",
        "input_schema": {"type": "object", "properties": {"x": {"type": "string"}}},
    }
    for name in ("Bash", "Edit", "Read")
]


ANSWER = "Done: hello.txt is created."
TURNS = 16
"""Calls per conversation: a session starts a new conversation every TURNS calls."""
FRESH = False
"""True (--fresh): every call starts a new conversation, so every prompt is rendered from scratch."""


def body(session: int, call: int) -> dict[str, Any]:
    """Call k of a session: the conversation so far (up to TURNS - 1 earlier exchanges) plus a new user
    task; the proxy splices the recorded ids and tokenizes only the new turn, as in a real rollout."""
    messages: list[dict[str, Any]] = []
    first = call if FRESH else call - call % TURNS
    for k in range(first, call):
        messages += [
            {"role": "user", "content": f"session {session}, task {k}"},
            {"role": "assistant", "content": ANSWER},
        ]
    messages.append({"role": "user", "content": f"session {session}, task {call}"})
    return {
        "model": "bench",
        "max_tokens": 64,
        "stream": True,
        "system": SYSTEM,
        "tools": TOOLS,
        "messages": messages,
    }


# -- the proxy side (child process) ----------------------------------------------------------------------


async def serve(n_sessions: int) -> None:
    from harnessrl.proxy.server import ProxyServer
    from harnessrl.proxy.testing import scripted_deps

    deps = scripted_deps([ANSWER])
    async with ProxyServer(deps, port=0, freeze_heap=True) as server:
        tokens = [deps.sessions.open(f"bench{i}").token for i in range(n_sessions)]
        print(json.dumps({"url": server.url, "tokens": tokens}), flush=True)
        await asyncio.get_running_loop().run_in_executor(
            None, sys.stdin.read
        )  # until the parent closes stdin


# -- the client side --------------------------------------------------------------------------------------


async def think(seconds: float, session: int, call: int) -> None:
    """A harness's pause between model calls (running tools), jittered 0.5x-1.5x, deterministic."""
    if seconds > 0:
        await asyncio.sleep(seconds * (0.5 + ((session * 7919 + call * 104729) % 1000) / 1000))


async def read_response(reader: asyncio.StreamReader) -> bytes:
    """One HTTP/1.1 response body: Content-Length or chunked (a fast turn comes whole, a slow one chunked)."""
    head = await reader.readuntil(b"\r\n\r\n")
    length = re.search(rb"(?i)content-length: *(\d+)", head)
    if length is not None:
        return await reader.readexactly(int(length.group(1)))
    body = b""
    while True:
        size = int((await reader.readuntil(b"\r\n")).strip(), 16)
        body += await reader.readexactly(size + 2)
        if size == 0:
            return body


async def proxy_session(
    host: str, port: int, token: str, session: int, calls: int, pause: float, out: list[float]
) -> None:
    reader, writer = await asyncio.open_connection(host, port)
    sock = writer.get_extra_info("socket")
    sock.setsockopt(6, 1, 1)  # TCP_NODELAY
    for call in range(calls):
        await think(pause, session, call)
        payload = json.dumps(body(session, call)).encode()
        head = f"POST /r/{token}/v1/messages HTTP/1.1\r\nhost: bench\r\ncontent-type: application/json\r\n"
        start = time.perf_counter()
        writer.write(head.encode() + f"content-length: {len(payload)}\r\n\r\n".encode() + payload)
        received = await read_response(reader)
        out.append(time.perf_counter() - start)
        if b"message_stop" not in received:
            raise RuntimeError(f"unexpected response: {received[:300]!r}")
    writer.close()


async def direct_session(
    engine: Any, fmt: Any, session: int, calls: int, pause: float, out: list[float]
) -> None:
    from harnessrl.protocols import SamplingParams
    from harnessrl.proxy.dialects import AnthropicDialect

    sampling = SamplingParams(max_tokens=64, stop_token_ids=tuple(fmt.stop_token_ids))
    prompts = []
    for call in range(calls):
        req = AnthropicDialect().parse(body(session, call))
        prompts.append(fmt.render(req.messages, req.tools))
    for call, ids in enumerate(prompts):
        await think(pause, session, call)
        start = time.perf_counter()
        await engine.generate(ids, sampling)
        out.append(time.perf_counter() - start)


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (Linux /proc; 0.0 elsewhere)."""
    try:
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def percentile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(q * (len(xs) - 1)))]


async def measure(
    n: int, calls_per_session: int, pause: float, server: dict[str, Any], engine: Any, fmt: Any
) -> dict[str, float]:
    host, port = server["url"].removeprefix("http://").split(":")
    direct: list[float] = []
    await asyncio.gather(
        *(direct_session(engine, fmt, s, calls_per_session, pause, direct) for s in range(n))
    )
    proxied: list[float] = []
    tokens = server["tokens"][:n]
    cpu0 = cpu_seconds(server["pid"])
    await asyncio.gather(
        *(
            proxy_session(host, int(port), t, s, calls_per_session, pause, proxied)
            for s, t in enumerate(tokens)
        )
    )
    result = {
        "calls": float(len(proxied)),
        "cpu_ms": (cpu_seconds(server["pid"]) - cpu0) * 1000 / len(proxied),
    }
    for name, xs in (("direct", direct), ("proxy", proxied)):
        result[f"{name}_p50"] = percentile(xs, 0.5) * 1000
        result[f"{name}_p99"] = percentile(xs, 0.99) * 1000
    return result


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sessions", type=int, nargs="+", default=[1, 64, 256])
    parser.add_argument(
        "--calls", type=int, default=300, help="calls per concurrency level (split over sessions)"
    )
    parser.add_argument("--think-ms", type=float, default=500.0, help="mean pause between a session's calls")
    parser.add_argument("--min-calls", type=int, default=2, help="calls per session at least")
    parser.add_argument("--fresh", action="store_true", help="one-call conversations (no splicing)")
    parser.add_argument(
        "--loop", choices=["asyncio", "uvloop"], default="asyncio", help="the proxy process's event loop"
    )
    parser.add_argument("--serve", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    global FRESH
    FRESH = args.fresh
    if args.serve:
        if args.loop == "uvloop":
            import uvloop

            uvloop.run(serve(args.serve))
        else:
            asyncio.run(serve(args.serve))
        return
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    child = subprocess.Popen(
        [sys.executable, __file__, "--serve", str(max(args.sessions)), "--loop", args.loop],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    try:
        assert child.stdout is not None
        server = json.loads(child.stdout.readline())
        server["pid"] = child.pid
        asyncio.run(run_all(args, server))
    finally:
        if child.stdin is not None:
            child.stdin.close()
        child.wait(timeout=30)


async def run_all(args: argparse.Namespace, server: dict[str, Any]) -> None:
    from harnessrl.proxy.testing import scripted_deps

    deps = scripted_deps([ANSWER])
    await measure(4, 5, 0.0, server, deps.engine, deps.fmt)  # warm up both paths
    header = f"{'sessions':>8} {'calls':>6} | {'direct p50':>10} {'p99':>7} | {'proxy p50':>9} {'p99':>7} |"
    header += f" {'added p50':>9} {'p99':>7} | {'ratio p50':>9} {'p99':>6} | {'proxy CPU/call':>14}"
    print(header + "\n" + "-" * len(header))
    for n in args.sessions:
        pause = args.think_ms / 1000 if n > 1 else 0.0
        r = await measure(n, max(args.min_calls, args.calls // n), pause, server, deps.engine, deps.fmt)
        added50, added99 = r["proxy_p50"] - r["direct_p50"], r["proxy_p99"] - r["direct_p99"]
        line = f"{n:>8} {int(r['calls']):>6} | {r['direct_p50']:>8.3f}ms {r['direct_p99']:>5.2f}ms |"
        line += f" {r['proxy_p50']:>7.2f}ms {r['proxy_p99']:>5.1f}ms | {added50:>7.2f}ms {added99:>5.1f}ms |"
        line += f" {r['proxy_p50'] / r['direct_p50']:>8.0f}x {r['proxy_p99'] / r['direct_p99']:>5.0f}x |"
        line += f" {r['cpu_ms']:>12.2f}ms"
        print(line, flush=True)
    print("goal at 64 sessions: added p50 <= 2 ms, added p99 <= 10 ms")
    print(f"load average now: {' '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
