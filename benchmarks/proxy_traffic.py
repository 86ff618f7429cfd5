"""The proxy on real-length conversations: how a call's cost grows with the conversation (issue 23 item 1).

Conversations shaped like the captured Claude Code and Codex sessions (tests/fixtures/harness-traffic/):
Claude Code's system prompt and tool block, padded with more of its own text to ~20k tokens, then
`--calls` (30) calls; the model answers every call with one Bash tool call and the harness appends that
call and a tool result of 0.5-4 KB (deterministic lengths, real text) before the next. The same
conversation is sent through each dialect (Anthropic Messages, OpenAI Chat, OpenAI Responses, Gemini),
at 1 and 64 concurrent sessions, to a live proxy (`ProxyServer` on 127.0.0.1 over the scripted engine,
in a child process with its own interpreter), called by `proxy_overhead.py`'s raw-socket client.

Baseline (as in `proxy_overhead.py`): the scripted engine's `generate` awaited directly on the same
prompts' ids rendered ahead of time; its CPU per call is the engine's own work (the proxy process runs
that engine too). Columns:

- added p50/p99: proxy latency minus direct latency (wall time: the machine is shared, read it loosely);
- CPU/call: the proxy process's CPU time (user + system, `time.process_time` in the child) per call,
  the load-independent figure. At 1 session it is taken per call (the child is asked for its process
  time before and after each call; the cost of asking is measured and subtracted), `--repeat` (3)
  conversations in a row, which gives the table by call index and the slopes; at 64 sessions it is
  the total over all calls. The table's CPU column includes the engine's (its own column).
- slope: least squares of per-call proxy CPU (the engine's own CPU for the same call, measured
  directly, subtracted: the scripted engine scans the whole prompt) against prompt tokens (us per
  1k prompt tokens) and against new tokens (the suffix the proxy rendered and tokenized: prompt
  minus the spliced prefix), each alone and both together. With token-in-token-out splicing a call
  should cost in proportion to its new tokens: the joint prompt-token slope should be ~0 and the
  new-token slope carry the growth.
- GC: the proxy process's garbage collections during the level (`gc.callbacks`): wall time per call,
  the longest pause, full collections. Every call in flight waits a pause out, and a full collection
  walks every live container: the open sessions' recorded prompt ids (one list per call) most of all.

`--stages` (in process, no HTTP): each stage of calls 1/10/20/29 timed on its own (decode, byte checks,
dialect parse, validation, splice match, suffix render and encode, digests) and whole calls, per
dialect, with each stage's growth per 1k prompt tokens; then the memory an open session holds after
the conversation, with the splicer's turns sharing the re-sent messages and, side by side, with each
turn's own copies (the code before).

    .venv/bin/python benchmarks/proxy_traffic.py                        # ~5 minutes on two loaded cores
    .venv/bin/python benchmarks/proxy_traffic.py --stages               # ~2 minutes
    .venv/bin/python benchmarks/proxy_traffic.py --dialects anthropic --sessions 1 --calls 30
    .venv/bin/python benchmarks/proxy_traffic.py --sessions 1 --profile /tmp/proxy.prof   # cProfile the proxy
    .venv/bin/python benchmarks/proxy_traffic.py --processes 1 2   # 1 vs 2 proxy processes, side by side

Goal (issue 23): added p50 <= 1 ms, p99 <= 5 ms, CPU <= 1 ms per call at 64 sessions, and a per-call
cost that does not grow with the conversation once the prefix is spliced.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import itertools
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from proxy_overhead import percentile, read_response, think

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "harness-traffic"
COMMAND = {"command": "cat src/module.py", "description": "Read the module"}
"""The one tool call the scripted model makes on every call (the harness runs it, appends its output)."""
DIALECTS = {
    "anthropic": "/v1/messages?beta=true",
    "chat": "/v1/chat/completions",
    "responses": "/v1/responses",
    "gemini": "/v1beta/models/policy:streamGenerateContent?alt=sse",
}
END_MARK = {"anthropic": b"message_stop", "chat": b"[DONE]", "responses": b"response.completed"}


# -- the conversation --------------------------------------------------------------------------------------


def claude_code_shape(pad_to_chars: int) -> tuple[str, list[dict[str, Any]], str]:
    """(system prompt, tools as name/description/schema, text for tool results) from the captured
    Claude Code call; the system prompt is padded with copies of its own text (as a CLAUDE.md would)."""
    body = json.loads((FIXTURES / "claude-code" / "0001_POST_v1_messages.json").read_text())["body"]
    system = (
        "\n".join(b["text"] for b in body["system"]) if isinstance(body["system"], list) else body["system"]
    )
    tools = [
        {"name": t["name"], "description": t.get("description", ""), "schema": t["input_schema"]}
        for t in body["tools"]
    ]
    corpus = system + json.dumps(tools)
    size = len(system) + len(json.dumps(tools))
    extra = []
    while size < pad_to_chars:
        chunk = f"\n\n# Project notes, part {len(extra) + 1}\n" + system
        extra.append(chunk)
        size += len(chunk)
    return system + "".join(extra), tools, corpus


def tool_result(corpus: str, session: int, call: int) -> str:
    """0.5-4 KB of real text, length and offset drawn per (session, call) (deterministic, uncorrelated
    with the call index, so that the fits can tell prompt length and new tokens apart)."""
    rng = random.Random(session * 100_003 + call)
    n = rng.randrange(512, 4096)
    start = rng.randrange(len(corpus) - n)
    return f"[output {session}.{call}]\n" + corpus[start : start + n]


def body(
    dialect: str, system: str, tools: list[dict[str, Any]], results: list[str], session: int
) -> dict[str, Any]:
    """The request after len(results) tool round trips, in `dialect`'s wire shape."""
    task = f"Session {session}: fix the failing test in src/module.py."
    args = json.dumps(COMMAND)
    if dialect == "anthropic":
        msgs: list[dict[str, Any]] = [{"role": "user", "content": [{"type": "text", "text": task}]}]
        for i, r in enumerate(results):
            msgs.append(
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": f"toolu_{i}", "name": "Bash", "input": COMMAND}],
                }
            )
            msgs.append(
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": f"toolu_{i}", "content": r}],
                }
            )
        wire = [
            {"name": t["name"], "description": t["description"], "input_schema": t["schema"]} for t in tools
        ]
        return {
            "model": "claude",
            "max_tokens": 4096,
            "stream": True,
            "system": system,
            "tools": wire,
            "messages": msgs,
        }
    if dialect == "chat":
        msgs = [{"role": "system", "content": system}, {"role": "user", "content": task}]
        for i, r in enumerate(results):
            call = {"id": f"call_{i}", "type": "function", "function": {"name": "Bash", "arguments": args}}
            msgs.append({"role": "assistant", "content": None, "tool_calls": [call]})
            msgs.append({"role": "tool", "tool_call_id": f"call_{i}", "content": r})
        wire = [
            {
                "type": "function",
                "function": {"name": t["name"], "description": t["description"], "parameters": t["schema"]},
            }
            for t in tools
        ]
        return {
            "model": "policy",
            "stream": True,
            "stream_options": {"include_usage": True},
            "tools": wire,
            "messages": msgs,
        }
    if dialect == "responses":
        items: list[dict[str, Any]] = [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": task}]}
        ]
        for i, r in enumerate(results):
            items.append({"type": "function_call", "call_id": f"call_{i}", "name": "Bash", "arguments": args})
            items.append({"type": "function_call_output", "call_id": f"call_{i}", "output": r})
        wire = [
            {
                "type": "function",
                "name": t["name"],
                "description": t["description"],
                "parameters": t["schema"],
            }
            for t in tools
        ]
        return {
            "model": "gpt",
            "stream": True,
            "store": False,
            "instructions": system,
            "tools": wire,
            "input": items,
        }
    contents: list[dict[str, Any]] = [{"role": "user", "parts": [{"text": task}]}]
    for r in results:
        contents.append({"role": "model", "parts": [{"functionCall": {"name": "Bash", "args": COMMAND}}]})
        contents.append(
            {"role": "user", "parts": [{"functionResponse": {"name": "Bash", "response": {"output": r}}}]}
        )
    decls = [
        {"name": t["name"], "description": t["description"], "parametersJsonSchema": t["schema"]}
        for t in tools
    ]
    return {
        "systemInstruction": {"parts": [{"text": system}]},
        "contents": contents,
        "tools": [{"functionDeclarations": decls}],
    }


# -- the proxy side (child process) ------------------------------------------------------------------------


def scripted() -> Any:
    from harnessrl.proxy.testing import scripted_deps
    from harnessrl.types import ChatMessage, ToolCall

    return scripted_deps(
        [ChatMessage(role="assistant", tool_calls=[ToolCall(name="Bash", arguments=COMMAND)])]
    )


async def serve(lists: bool = False) -> None:
    """Commands on stdin, one per line, answers on stdout: `open N` (N new sessions: their tokens),
    `cpu` (process time), `gc` (collections since the last ask), `calls` (prompt/output lengths and
    render of every call of the open sessions, closing them). `lists`: the baseline of
    `--baseline-lists`."""
    from harnessrl.proxy.server import ProxyServer

    if lists:  # the code before 2026-12-03: open sessions hold prompt ids as lists
        from harnessrl.proxy import handler

        handler.held_ids = list  # type: ignore[assignment]
    deps = scripted()
    loop = asyncio.get_running_loop()
    opened: list[str] = []
    pauses: list[list[float]] = [[], [], []]  # per generation: each collection's wall time
    started = [0.0]

    def on_gc(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            started[0] = time.perf_counter()
        else:
            pauses[info["generation"]].append(time.perf_counter() - started[0])

    gc.callbacks.append(on_gc)
    async with ProxyServer(deps, port=0, freeze_heap=True) as server:
        print(json.dumps({"url": server.url}), flush=True)
        while line := await loop.run_in_executor(None, sys.stdin.readline):
            cmd, _, arg = line.strip().partition(" ")
            if cmd == "cpu":
                out: Any = time.process_time()
            elif cmd == "gc":  # collections since the last ask, per generation: [count, total s, max s]
                out = [[len(p), sum(p), max(p, default=0.0)] for p in pauses]
                for p in pauses:
                    p.clear()
            elif cmd == "open":
                base = len(opened)
                opened += [f"r{base + i}" for i in range(int(arg))]
                out = [deps.sessions.open(r).token for r in opened[base:]]
            else:
                out = [
                    [[len(c.prompt_ids), len(c.output_ids), c.render] for c in deps.sessions.close(r)]
                    for r in opened
                ]
                opened.clear()
            print(json.dumps(out), flush=True)


class Child:
    def __init__(self, profile: str | None, lists: bool = False) -> None:
        serve_args = ["--serve", "--serve-lists"] if lists else ["--serve"]
        cmd = [sys.executable, __file__, *serve_args]
        if profile:
            cmd = [sys.executable, "-m", "cProfile", "-o", profile, __file__, *serve_args]
        env = {**os.environ, "OMP_NUM_THREADS": "1"}
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        self.url = self.ask("")["url"]

    def ask(self, command: str) -> Any:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        if command:
            self.proc.stdin.write(command + "\n")
            self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(timeout=60)


# -- the client side ---------------------------------------------------------------------------------------


async def proxy_session(
    child: Child,
    dialect: str,
    token: str,
    payloads: list[bytes],
    pause: float,
    session: int,
    out: dict[str, list[float]],
) -> None:
    host, port = child.url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.get_extra_info("socket").setsockopt(6, 1, 1)  # TCP_NODELAY
    per_call = pause == 0.0
    for call, payload in enumerate(payloads):
        await think(pause, session, call)
        head = f"POST /r/{token}{DIALECTS[dialect]} HTTP/1.1\r\nhost: b\r\ncontent-type: application/json\r\n"
        cpu0 = child.ask("cpu") if per_call else 0.0
        start = time.perf_counter()
        writer.write(head.encode() + f"content-length: {len(payload)}\r\n\r\n".encode() + payload)
        received = await read_response(reader)
        out["latency"].append(time.perf_counter() - start)
        if per_call:
            out["cpu"].append(child.ask("cpu") - cpu0)
        if END_MARK.get(dialect, b"finishReason") not in received:
            raise RuntimeError(f"unexpected response: {received[:300]!r}")
    writer.close()


async def direct(engine: Any, prompts: list[list[int]], n: int, pause: float) -> tuple[list[float], float]:
    """The baseline: `engine.generate` on pre-rendered ids, n sessions; (latencies, CPU s per call)."""
    from harnessrl.protocols import SamplingParams

    sampling = SamplingParams(max_tokens=4096, stop_token_ids=tuple(engine.fmt.stop_token_ids))
    cpu0 = time.process_time()
    out = await timed_sessions(engine, sampling, prompts, n, pause)
    return out, (time.process_time() - cpu0) / len(out)


async def timed_sessions(
    engine: Any, sampling: Any, prompts: list[list[int]], n: int, pause: float
) -> list[float]:
    """Seconds of each `engine.generate` call: n sessions, each the prompts in order, `think` between."""
    out: list[float] = []

    async def one(session: int) -> None:
        for call, ids in enumerate(prompts):
            await think(pause, session, call)
            start = time.perf_counter()
            await engine.generate(ids, sampling)
            out.append(time.perf_counter() - start)

    await asyncio.gather(*(one(s) for s in range(n)))
    return out


async def engine_cpu_by_call(engine: Any, prompts: list[list[int]], runs: int = 5) -> list[float]:
    """The scripted engine's own CPU seconds per call index (least of `runs`): the proxy process runs
    the same engine, so this is subtracted from its per-call CPU (the engine scans the whole prompt)."""
    from harnessrl.protocols import SamplingParams

    sampling = SamplingParams(max_tokens=4096, stop_token_ids=tuple(engine.fmt.stop_token_ids))
    best = [float("inf")] * len(prompts)
    for _ in range(runs):
        for call, ids in enumerate(prompts):
            cpu0 = time.process_time()
            await engine.generate(ids, sampling)
            best[call] = min(best[call], time.process_time() - cpu0)
    return best


def fit(xs: list[list[float]], ys: list[float]) -> list[float]:
    """Least squares y = b0 + sum(bi * xi): the coefficients [b0, b1, ...] (normal equations)."""
    rows = [[1.0, *x] for x in xs]
    k = len(rows[0])
    a = [[sum(r[i] * r[j] for r in rows) for j in range(k)] for i in range(k)]
    b = [sum(r[i] * y for r, y in zip(rows, ys, strict=True)) for i in range(k)]
    for col in range(k):  # Gauss-Jordan with partial pivoting
        piv = max(range(col, k), key=lambda r: abs(a[r][col]))
        a[col], a[piv], b[col], b[piv] = a[piv], a[col], b[piv], b[col]
        for r in range(k):
            if r != col and a[col][col]:
                f = a[r][col] / a[col][col]
                a[r] = [x - f * y for x, y in zip(a[r], a[col], strict=True)]
                b[r] -= f * b[col]
    return [b[i] / a[i][i] if a[i][i] else 0.0 for i in range(k)]


def new_tokens(calls: list[list[Any]]) -> list[int]:
    """Per call: prompt tokens minus the previous call's prompt + output (the spliced prefix)."""
    out, prev = [], 0
    for prompt, output, _render in calls:
        out.append(prompt - prev)
        prev = prompt + output
    return out


async def run_level(
    args: argparse.Namespace, child: Child, dialect: str, n: int, convo: Any, engine: Any
) -> dict[str, Any]:
    system, tools, corpus, prompts = convo
    pause = args.think_ms / 1000 if n > 1 else 0.0
    payloads = [
        [
            json.dumps(
                body(dialect, system, tools, [tool_result(corpus, s, c) for c in range(k)], s)
            ).encode()
            for k in range(args.calls)
        ]
        for s in range(n if n > 1 else 0)
    ]
    d_lat, d_cpu = await direct(engine, prompts, n, pause)
    out: dict[str, list[float]] = {"latency": [], "cpu": []}
    # One session: `--repeat` conversations one after another (different tool results, so nothing is
    # served from the tokenizer's piece cache), every call timed on its own and pooled for the fits.
    groups = [[1000 + s] for s in range(args.repeat)] if n == 1 else [list(range(n))]
    calls: list[list[Any]] = []
    child.ask("gc")  # reset the collector's pause log
    cpu0 = child.ask("cpu")
    for group in groups:
        if n == 1:
            payloads = [
                [
                    json.dumps(
                        body(dialect, system, tools, [tool_result(corpus, s, c) for c in range(k)], s)
                    ).encode()
                    for k in range(args.calls)
                ]
                for s in group
            ]
        tokens = child.ask(f"open {len(group)}")
        await asyncio.gather(
            *(
                proxy_session(child, dialect, t, payloads[i], pause, s, out)
                for i, (s, t) in enumerate(zip(group, tokens, strict=True))
            )
        )
        calls += child.ask("calls")
    total_cpu = child.ask("cpu") - cpu0
    collections = child.ask("gc")
    renders = [c[2] for conv in calls for c in conv]
    r: dict[str, Any] = {"n": n, "calls": len(out["latency"]), "direct_cpu": d_cpu * 1000}
    r["cpu"] = (
        (total_cpu if not out["cpu"] else sum(out["cpu"]) - args.ask_cost * len(out["cpu"]))
        * 1000
        / r["calls"]
    )
    r["spliced"] = renders.count("spliced")
    r["gc_ms"] = sum(g[1] for g in collections) * 1000 / r["calls"]
    r["gc_max_ms"] = max(g[2] for g in collections) * 1000
    r["gc_full"] = collections[2][0]
    for name, xs in (("direct", d_lat), ("proxy", out["latency"])):
        r[f"{name}_p50"], r[f"{name}_p99"] = percentile(xs, 0.5) * 1000, percentile(xs, 0.99) * 1000
    if out["cpu"]:
        sizes = [(c[0], new) for conv in calls for c, new in zip(conv, new_tokens(conv), strict=True)]
        r["per_call"] = [
            (p, new, (cpu - args.ask_cost - args.engine_cpu[i % args.calls]) * 1000, lat * 1000)
            for i, ((p, new), cpu, lat) in enumerate(zip(sizes, out["cpu"], out["latency"], strict=True))
        ]
        r["calls_per_conversation"] = args.calls
    return r


def report_slopes(dialect: str, r: dict[str, Any], every: int) -> None:
    k = r["calls_per_conversation"]
    rows = [row for i, row in enumerate(r["per_call"]) if i % k]  # call 0 renders it all: not spliced
    prompt = [float(p) for p, _, _, _ in rows]
    new = [float(x) for _, x, _, _ in rows]
    cpu = [c for _, _, c, _ in rows]
    print(f"  {dialect}, 1 session, by call (the first conversation of {len(r['per_call']) // k}):")
    print(f"    {'call':>4} {'prompt tok':>10} {'new tok':>7} {'proxy CPU ms':>12} {'latency ms':>10}")
    for i, (p, x, c, lat) in enumerate(r["per_call"][:k]):
        if i % every == 0 or i == k - 1:
            print(f"    {i:>4} {p:>10} {x:>7} {c:>12.2f} {lat:>10.2f}")
    b_p = fit([[p / 1000] for p in prompt], cpu)
    b_n = fit([[x / 1000] for x in new], cpu)
    b_j = fit([[p / 1000, x / 1000] for p, x in zip(prompt, new, strict=True)], cpu)
    print(
        f"  slope ({dialect}, spliced calls): CPU vs prompt tokens alone {b_p[1] * 1000:+.1f} us/1k tok"
        f" (intercept {b_p[0]:.2f} ms); vs new tokens alone {b_n[1] * 1000:+.1f} us/1k tok"
        f" (intercept {b_n[0]:.2f} ms)"
    )
    grow = b_j[1] * (prompt[-1] - prompt[0]) / 1000
    verdict = "grows" if grow > 0.1 * max(b_j[0], 1e-9) + 0.05 else "does not grow"
    print(
        f"  joint fit ({dialect}): {b_j[0]:.2f} ms + {b_j[1] * 1000:+.1f} us/1k prompt tok"
        f" + {b_j[2] * 1000:+.1f} us/1k new tok: per-call CPU {verdict} with the prompt"
        f" ({grow:+.2f} ms from {prompt[0]:.0f} to {prompt[-1]:.0f} prompt tokens)"
    )


async def run_all(args: argparse.Namespace, child: Child, baseline: Child | None = None) -> None:
    from harnessrl.proxy.dialects import AnthropicDialect

    deps = scripted()
    system, tools, corpus = claude_code_shape(args.pad_chars)
    conv = [
        AnthropicDialect().parse(
            body("anthropic", system, tools, [tool_result(corpus, 0, c) for c in range(k)], 0)
        )
        for k in range(args.calls)
    ]
    prompts = [deps.fmt.render(req.messages, req.tools) for req in conv]
    convo = (system, tools, corpus, prompts)
    cpus = [child.ask("cpu") for _ in range(21)]
    args.engine_cpu = await engine_cpu_by_call(deps.engine, prompts)
    args.ask_cost = sorted(b - a for a, b in itertools.pairwise(cpus))[10]
    print(
        f"conversation: {len(prompts[0])} prompt tokens at call 0, {len(prompts[-1])} at call"
        f" {args.calls - 1}; subtracted from the proxy's CPU per call at 1 session: the child's CPU per `cpu`"
        f" query ({args.ask_cost * 1e6:.0f} us) and the engine's own CPU for that call"
        f" ({args.engine_cpu[0] * 1e3:.2f} ms at call 0, {args.engine_cpu[-1] * 1e3:.2f} ms at the last)"
    )
    await run_level(
        argparse.Namespace(**{**vars(args), "calls": 3}), child, "anthropic", 2, convo, deps.engine
    )  # warm up
    if baseline is not None:
        warm = argparse.Namespace(**{**vars(args), "calls": 3})
        await run_level(warm, baseline, "anthropic", 2, convo, deps.engine)
    header = f"{'dialect':>9} {'sessions':>8} {'calls':>5} {'spliced':>7} | {'direct p50':>10} {'p99':>6} |"
    header += f" {'proxy p50':>9} {'p99':>6} | {'added p50':>9} {'p99':>6} | {'ratio p50':>9} |"
    header += (
        f" {'engine CPU':>10} {'proxy CPU/call':>14} {'ratio':>6} | {'GC/call':>7} {'max GC':>7} {'full':>4}"
    )
    results = []
    for dialect in args.dialects:
        for n in args.sessions:
            r = await run_level(args, child, dialect, n, convo, deps.engine)
            results.append((dialect, r))
            if "per_call" in r:
                report_slopes(dialect, r, args.every)
            if n > 1 and baseline is not None:
                results.append(
                    (dialect + "*", await run_level(args, baseline, dialect, n, convo, deps.engine))
                )
    print("\n" + header + "\n" + "-" * len(header))
    for dialect, r in results:
        a50, a99 = r["proxy_p50"] - r["direct_p50"], r["proxy_p99"] - r["direct_p99"]
        line = f"{dialect:>9} {r['n']:>8} {r['calls']:>5} {r['spliced']:>7} |"
        line += f" {r['direct_p50']:>8.3f}ms {r['direct_p99']:>4.2f}ms |"
        line += f" {r['proxy_p50']:>7.2f}ms {r['proxy_p99']:>4.1f}ms | {a50:>7.2f}ms {a99:>4.1f}ms |"
        line += f" {r['proxy_p50'] / r['direct_p50']:>8.0f}x | {r['direct_cpu']:>8.3f}ms {r['cpu']:>12.2f}ms"
        line += f" {r['cpu'] / max(r['direct_cpu'], 1e-9):>5.0f}x"
        line += f" | {r['gc_ms']:>5.2f}ms {r['gc_max_ms']:>5.0f}ms {r['gc_full']:>4}"
        print(line, flush=True)
    print("CPU is process time (user + system), not wall time; latency is wall time on a shared machine.")
    if baseline is not None:
        print(
            "*: the baseline server (--baseline-lists): open sessions hold prompt ids as lists, as before"
            " 2026-12-03, run right after the row above it"
        )
    print(
        "GC: the proxy process's garbage collections during the level (wall time per call, the longest"
        " pause, the number of full collections); every call in flight waits a pause out."
    )
    print("goal at 64 sessions: added p50 <= 1 ms, added p99 <= 5 ms, proxy CPU <= 1 ms per call")
    print(f"load average now: {' '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} cores")


STAGE_CALLS = (1, 10, 20, 29)
"""The calls of a 30-call conversation `--stages` times (call 0 is rendered from scratch: no splice)."""


def _cpu_ms(fn: Any, reps: int, before: Any = None) -> float:
    """Median process time of `fn()` over `reps` runs, in ms (`before()` runs untimed ahead of each)."""
    times = []
    for _ in range(reps):
        if before is not None:
            before()
        t = time.process_time()
        fn()
        times.append(time.process_time() - t)
    return statistics.median(times) * 1e3


def _conversation(dialect: str, args: argparse.Namespace) -> tuple[Any, list[bytes]]:
    """(the dialect, the `--calls` request bodies of session 0's conversation) for the in-process modes."""
    from harnessrl.proxy.dialects import resolve

    path, _, query = DIALECTS[dialect].partition("?")
    endpoint = resolve(path, query.encode())
    assert endpoint is not None
    system, tools, corpus = claude_code_shape(args.pad_chars)
    bodies: list[bytes] = []
    results: list[str] = []
    for k in range(args.calls):
        bodies.append(json.dumps(body(dialect, system, tools, results, 0)).encode())
        results.append(tool_result(corpus, 0, k))
    return endpoint.dialect, bodies


async def stage_profile(dialect: str, args: argparse.Namespace) -> None:
    """In process, no HTTP: run one conversation through the handler's stages (`prepare`, `start`), and
    at the calls in STAGE_CALLS time each stage of that call on its own (median of `--reps`): what a
    call costs where, and how each part grows with the conversation. The tokenizer's piece cache is
    emptied before each timing of the suffix, so new text is encoded as on a real call (the shared
    system prompt stays cached in real traffic; here it is re-encoded only by the from-scratch render)."""
    deps = scripted()
    d, bodies = _conversation(dialect, argparse.Namespace(**{**vars(args), "calls": max(STAGE_CALLS) + 1}))
    session = deps.sessions.by_path_token(deps.sessions.open("stages").token)
    assert session is not None
    headers = {"content-type": "application/json"}
    encoder = deps.fmt._encoder
    rows: dict[int, dict[str, float]] = {}
    sizes: dict[int, tuple[int, int, int]] = {}
    for k, raw in enumerate(bodies):
        if k in STAGE_CALLS:
            rows[k], sizes[k] = _time_stages(deps, d, session, raw, k, dialect, encoder, args.reps)
        await _one_call(deps, d, session, headers, raw)  # recorded: the conversation goes on from it
    # whole calls: the same conversation in `--repeat` more sessions (a call can be made only once), the
    # median per call; the tokenizer cache emptied before each timed call, as for the stages
    whole: dict[int, list[float]] = {k: [] for k in STAGE_CALLS}
    for rep in range(max(args.repeat, 3)):
        again = deps.sessions.by_path_token(deps.sessions.open(f"whole{rep}").token)
        for k, raw in enumerate(bodies):
            if k in STAGE_CALLS:
                encoder._cache.clear()
            t = time.process_time()
            await _one_call(deps, d, again, headers, raw)
            if k in STAGE_CALLS:
                whole[k].append((time.process_time() - t) * 1e3)
    for k in STAGE_CALLS:
        rows[k]["whole call (prepare+start)"] = statistics.median(whole[k])
    names = list(rows[STAGE_CALLS[0]])
    first, last = STAGE_CALLS[0], STAGE_CALLS[-1]
    grow_tok = (sizes[last][1] - sizes[first][1]) / 1000
    print(f"\n  {dialect}: CPU per stage of one call (ms, median of {args.reps}), in process")
    head = (
        f"    {'stage':<28}"
        + "".join(f" {'call ' + str(k):>9}" for k in STAGE_CALLS)
        + f" {'us/1k prompt tok':>17}"
    )
    print(head)
    print("    " + "-" * (len(head) - 4))
    for name in names:
        vals = [rows[k][name] for k in STAGE_CALLS]
        slope = (vals[-1] - vals[0]) / grow_tok * 1e3
        print(f"    {name:<28}" + "".join(f" {v:>9.3f}" for v in vals) + f" {slope:>+17.1f}")
    for label, i in (("body KB", 0), ("prompt tokens", 1), ("new tokens", 2)):
        vals = [sizes[k][i] / (1024 if i == 0 else 1) for k in STAGE_CALLS]
        print(f"    {label:<28}" + "".join(f" {v:>9.0f}" for v in vals))
    per_tok = [rows[k]["  of which encode"] / sizes[k][2] * 1e3 for k in STAGE_CALLS]
    print(
        f"    encode: {min(per_tok):.2f}-{max(per_tok):.2f} us per new token"
        " (the tokenizer's own rate: the floor of a call that brings new text)"
    )


async def session_memory(dialect: str, args: argparse.Namespace, sessions: int = 4) -> None:
    """Memory an open session holds after the 30-call conversation (tracemalloc: Python allocations
    still live, per session), with the splicer's turns sharing the re-sent messages (now) and with
    each turn holding the request's own copies (the code before: `Prompt.messages`/`tools` unset),
    side by side in this process; and how much of it is the recorded calls' prompt ids."""
    import dataclasses
    import tracemalloc

    deps = scripted()
    d, bodies = _conversation(dialect, args)
    shared_builder = deps.build_prompt

    def unshared_builder(*a: Any) -> Any:
        return dataclasses.replace(shared_builder(*a), messages=None, tools=None)

    headers = {"content-type": "application/json"}
    held: dict[str, float] = {}
    tracemalloc.start()
    for label, builder in (("shared (now)", shared_builder), ("copies (before)", unshared_builder)):
        deps.build_prompt = builder
        gc.collect()
        before = tracemalloc.get_traced_memory()[0]
        for i in range(sessions):
            session = deps.sessions.by_path_token(deps.sessions.open(f"{label}{i}").token)
            for raw in bodies:
                await _one_call(deps, d, session, headers, raw)
        gc.collect()
        held[label] = (tracemalloc.get_traced_memory()[0] - before) / sessions / 2**20
    tracemalloc.stop()
    deps.build_prompt = shared_builder
    ids = sum(len(c.prompt_ids) for c in deps.sessions.calls("shared (now)0"))
    now, was = held["shared (now)"], held["copies (before)"]
    print(
        f"    memory held per open {args.calls}-call session: {now:.1f} MB with shared turns, {was:.1f} MB"
        f" with each turn's own copies (the code before): {now / was:.2f}x; of it the recorded calls'"
        f" prompt ids, one tuple per call: {ids} ids, {ids * 8 / 2**20:.1f} MB of slots"
    )


def _time_stages(
    deps: Any, d: Any, session: Any, raw: bytes, k: int, dialect: str, encoder: Any, reps: int
) -> tuple[dict[str, float], tuple[int, int, int]]:
    """One call's stages timed on their own (see `stage_profile`); the call itself is not made."""
    from harnessrl.chat.tito import find_turn
    from harnessrl.formats import untrusted_json
    from harnessrl.proxy import body, capture
    from harnessrl.proxy.canonical import validate_messages

    b = body.parse_body(raw, "application/json")
    req = d.parse(b)
    turns = list(session.turns)
    turn = find_turn(turns, req.messages, req.tools)
    assert turn is not None, f"{dialect} call {k} did not splice"
    at = len(turn.messages)
    suffix = deps.fmt.suffix_after(req.messages, req.tools, at, closed=True)
    assert suffix is not None
    text = deps.fmt.tokenizer.decode(suffix)  # the suffix's text (what suffix_after encodes)
    r = {
        "decode (orjson)": _cpu_ms(lambda: untrusted_json._decode(raw, untrusted_json.MAX_INT_DIGITS), reps),
        "byte checks": _cpu_ms(
            lambda: (
                raw.translate(untrusted_json._DIGITS_TO_ZERO),
                untrusted_json._check_depth(raw, b, untrusted_json.MAX_DEPTH, "request body"),
                untrusted_json._check_surrogates(raw, b, "request body"),
            ),
            reps,
        ),
        "dialect parse": _cpu_ms(lambda: d.parse(b), reps),
        "validate": _cpu_ms(lambda: validate_messages(req.messages), reps),
        "splice match": _cpu_ms(lambda: find_turn(turns, req.messages, req.tools), reps),
        "suffix render+encode": _cpu_ms(
            lambda: deps.fmt.suffix_after(req.messages, req.tools, at, closed=True),
            reps,
            before=encoder._cache.clear,
        ),
        "  of which encode": _cpu_ms(lambda: deps.fmt.encode(text), reps, before=encoder._cache.clear),
        "prompt ids (concat)": _cpu_ms(lambda: [*turn.prompt_ids, *turn.output_ids, *suffix], reps),
        "digests": _cpu_ms(
            lambda: (
                capture.digest(raw),
                capture.system_digest(req.messages),
                capture.tools_digest(req.tools),
            ),
            reps,
        ),
    }
    sizes = (len(raw), len(turn.prompt_ids) + len(turn.output_ids) + len(suffix), len(suffix))
    return r, sizes


async def _one_call(deps: Any, d: Any, session: Any, headers: dict[str, str], raw: bytes) -> None:
    from harnessrl.proxy import handler

    call = await handler.prepare(deps, d, session, headers, raw)
    await handler.start(call)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dialects", nargs="+", choices=list(DIALECTS), default=list(DIALECTS))
    parser.add_argument("--sessions", type=int, nargs="+", default=[1, 64])
    parser.add_argument("--calls", type=int, default=30, help="calls per conversation")
    parser.add_argument("--pad-chars", type=int, default=80_000, help="system prompt + tools, in characters")
    parser.add_argument(
        "--think-ms", type=float, default=500.0, help="mean pause between a session's calls (not at 1)"
    )
    parser.add_argument("--repeat", type=int, default=3, help="conversations in a row at 1 session")
    parser.add_argument("--every", type=int, default=5, help="print every k-th call of the 1-session run")
    parser.add_argument("--profile", help="run the proxy child under cProfile, writing this file")
    parser.add_argument(
        "--stages", action="store_true", help="per-stage CPU of single calls, in process (no HTTP), then stop"
    )
    parser.add_argument("--reps", type=int, default=21, help="timings per stage with --stages")
    parser.add_argument(
        "--baseline-lists",
        action="store_true",
        help="also run each multi-session level on a server holding prompt ids as lists (the code before)",
    )
    parser.add_argument(
        "--processes",
        type=int,
        nargs="+",
        help="instead: the same traffic through 1 vs N proxy processes at max(--sessions) sessions, side by"
        " side (benchmarks/proxy_processes.py), e.g. --processes 1 2",
    )
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--serve-lists", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        asyncio.run(serve(args.serve_lists))
        return
    if args.processes:
        from proxy_processes import parser as processes_parser
        from proxy_processes import run as run_processes

        shared = [
            "--sessions",
            str(max(args.sessions)),
            "--calls",
            str(args.calls),
            "--repeat",
            str(args.repeat),
        ]
        shared += ["--pad-chars", str(args.pad_chars), "--think-ms", str(args.think_ms)]
        asyncio.run(
            run_processes(processes_parser().parse_args(["--processes", *map(str, args.processes), *shared]))
        )
        return
    if args.stages:
        for dialect in args.dialects:
            asyncio.run(stage_profile(dialect, args))
            asyncio.run(session_memory(dialect, args))
        print(f"load average now: {' '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
        return
    child = Child(args.profile)
    baseline = Child(None, lists=True) if args.baseline_lists else None
    try:
        asyncio.run(run_all(args, child, baseline))
    finally:
        child.close()
        if baseline is not None:
            baseline.close()


if __name__ == "__main__":
    main()
