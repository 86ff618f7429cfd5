"""Real harnesses (from npm) inside the bubblewrap sandbox, against a replay model server on the host.

The server answers each model call with the next `reply.decision` of a captured harness-traffic
fixture (call 1: a tool call running `printf hi > hello.txt`; call 2: the text `done`), streamed in
the API the harness speaks. Passing means: the harness installed, started inside the sandbox, reached
the host only through the endpoint bridge, ran the tool inside the sandbox (hello.txt appears in the
workspace), and exited 0 with the final message `done`.

Marked `harness`: the first run installs the pinned npm packages (minutes); OpenClaw alone takes
10-20 s to start on two cores.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from harnessrl.harnesses import Endpoint, McpServer, get_harness, harness_binds, run_harness
from harnessrl.sandbox import Sandbox, SandboxSpec
from harnessrl.sandbox.bwrap import bwrap_path

pytestmark = [
    pytest.mark.harness,
    pytest.mark.skipif(bwrap_path() is None, reason="bubblewrap is not installed"),
]
API_KEY = "sk-rollout-token-123"
PREFIX = f"/r/{API_KEY}"


def sse(event: str | None, data: dict[str, Any] | str) -> str:
    body = data if isinstance(data, str) else json.dumps(data)
    return (f"event: {event}\n" if event else "") + f"data: {body}\n\n"


def anthropic_stream(decision: list[Any], model: str) -> Iterator[str]:
    usage = {"input_tokens": 10, "output_tokens": 1}
    message = {"id": "msg_01", "type": "message", "role": "assistant", "model": model, "content": []}
    yield sse("message_start", {"type": "message_start", "message": {**message, "usage": usage}})
    if decision[0] == "tool":
        block = {"type": "tool_use", "id": "toolu_01", "name": decision[1], "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(decision[2])}
        stop = "tool_use"
    else:
        block, delta, stop = (
            {"type": "text", "text": ""},
            {"type": "text_delta", "text": decision[1]},
            "end_turn",
        )
    yield sse("content_block_start", {"type": "content_block_start", "index": 0, "content_block": block})
    yield sse("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta})
    yield sse("content_block_stop", {"type": "content_block_stop", "index": 0})
    yield sse(
        "message_delta",
        {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None}, "usage": usage},
    )
    yield sse("message_stop", {"type": "message_stop"})


def responses_stream(decision: list[Any], model: str) -> Iterator[str]:
    if decision[0] == "tool":
        args = json.dumps(decision[2])
        item = {
            "type": "function_call",
            "id": "fc_1",
            "call_id": "call_1",
            "name": decision[1],
            "arguments": args,
        }
    else:
        part = {"type": "output_text", "text": decision[1], "annotations": []}
        item = {"type": "message", "id": "msg_1", "role": "assistant", "content": [part]}
    usage = {
        "input_tokens": 10,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 5,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 15,
    }
    resp = {
        "id": "resp_1",
        "object": "response",
        "created_at": int(time.time()),
        "model": model,
        "output": [],
    }
    seq = iter(range(100))
    yield sse(
        "response.created", {"type": "response.created", "sequence_number": next(seq), "response": resp}
    )
    started = {**item, "status": "in_progress"}
    if item["type"] == "function_call":
        started["arguments"] = ""
    else:
        started["content"] = []
    added = {"type": "response.output_item.added", "sequence_number": next(seq), "output_index": 0}
    yield sse("response.output_item.added", {**added, "item": started})
    if item["type"] == "function_call":
        ev = {"item_id": "fc_1", "output_index": 0, "sequence_number": next(seq)}
        yield sse(
            "response.function_call_arguments.delta",
            {"type": "response.function_call_arguments.delta", **ev, "delta": item["arguments"]},
        )
        ev["sequence_number"] = next(seq)
        yield sse(
            "response.function_call_arguments.done",
            {"type": "response.function_call_arguments.done", **ev, "arguments": item["arguments"]},
        )
    else:
        ev = {"item_id": "msg_1", "output_index": 0, "content_index": 0}
        empty = {"type": "output_text", "text": "", "annotations": []}
        for kind, extra in [
            ("response.content_part.added", {"part": empty}),
            ("response.output_text.delta", {"delta": decision[1]}),
            ("response.output_text.done", {"text": decision[1]}),
            ("response.content_part.done", {"part": item["content"][0]}),
        ]:
            yield sse(kind, {"type": kind, **ev, **extra, "sequence_number": next(seq)})
    done = {**item, "status": "completed"}
    finished = {"type": "response.output_item.done", "sequence_number": next(seq), "output_index": 0}
    yield sse("response.output_item.done", {**finished, "item": done})
    final = {**resp, "status": "completed", "output": [done], "usage": usage}
    yield sse(
        "response.completed", {"type": "response.completed", "sequence_number": next(seq), "response": final}
    )


def chat_stream(decision: list[Any], model: str) -> Iterator[str]:
    base = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
    }
    if decision[0] == "tool":
        call = {"index": 0, "id": "call_1", "type": "function"}
        call["function"] = {"name": decision[1], "arguments": json.dumps(decision[2])}
        delta: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [call]}
        finish = "tool_calls"
    else:
        delta, finish = {"role": "assistant", "content": decision[1]}, "stop"
    yield sse(None, {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
    yield sse(None, {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
    usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    yield sse(None, {**base, "choices": [], "usage": usage})
    yield sse(None, "[DONE]")


STREAMS = {
    "/v1/messages": anthropic_stream,
    "/v1/responses": responses_stream,
    "/v1/chat/completions": chat_stream,
}


class ReplayServer:
    """Serves a fixture folder's decisions in order; records every request it gets."""

    def __init__(self, fixture_dir: Path) -> None:
        files = sorted(fixture_dir.glob("*.json"))
        self.decisions = [json.loads(f.read_text())["reply"]["decision"] for f in files]
        self.requests: list[dict[str, Any]] = []
        self.model_calls = 0
        app = Starlette(routes=[Route("/{path:path}", self.handle, methods=["GET", "POST", "HEAD"])])
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
        self.port = 0

    async def handle(self, request: Request) -> Response:
        body = await request.body()
        record = {"method": request.method, "path": request.url.path, "headers": dict(request.headers)}
        record["body"] = body.decode(errors="replace")
        self.requests.append(record)
        # Like the proxy, serve the API under a per-rollout prefix `/r/<token>`.
        stream = STREAMS.get(request.url.path.removeprefix(PREFIX))
        if request.method != "POST" or stream is None:
            return JSONResponse(
                {"error": {"type": "not_found", "message": request.url.path}}, status_code=404
            )
        payload = json.loads(body)
        decision = self.decisions[min(self.model_calls, len(self.decisions) - 1)]
        self.model_calls += 1
        return StreamingResponse(stream(decision, payload.get("model", "m")), media_type="text/event-stream")

    async def __aenter__(self) -> ReplayServer:
        self.task = asyncio.create_task(self.server.serve())
        while not self.server.started:
            await asyncio.sleep(0.01)
        self.port = self.server.servers[0].sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.server.should_exit = True
        await self.task


@pytest.fixture
async def replay(request: pytest.FixtureRequest, shared_fixtures: Path) -> AsyncIterator[ReplayServer]:
    async with ReplayServer(shared_fixtures / "harness-traffic" / request.param) as server:
        yield server


# One default configuration per harness runs with `-m harness`; variants are also marked slow
# (OpenClaw alone needs 15 s to a minute and a half per run, depending on the machine's load).
SLOW = pytest.mark.slow
CASES = [
    pytest.param("claude-code", "claude-code", {}, id="claude-code"),
    pytest.param("claude-code", "claude-code-bare", {"bare": True}, id="claude-code-bare", marks=SLOW),
    pytest.param("codex", "codex-responses", {}, id="codex-responses"),
    pytest.param("openclaw", "openclaw-responses", {}, id="openclaw-responses"),
    pytest.param("openclaw", "openclaw-chat", {"api": "openai-completions"}, id="openclaw-chat", marks=SLOW),
    pytest.param(
        "openclaw", "openclaw-anthropic", {"api": "anthropic-messages"}, id="openclaw-anthropic", marks=SLOW
    ),
]


@asynccontextmanager
async def installed_in_sandbox(
    name: str, replay: ReplayServer, sb_base: Path
) -> AsyncIterator[tuple[Any, Sandbox, Endpoint]]:
    """The harness installed, a sandbox whose endpoint is the replay server, and the endpoint it sees."""
    harness = get_harness(name)
    await asyncio.to_thread(harness.ensure_installed)
    spec = SandboxSpec(endpoint=("127.0.0.1", replay.port), ro_binds=harness_binds(), base_dir=sb_base)
    async with await Sandbox.create(spec) as sb:
        assert sb.endpoint_url is not None
        yield harness, sb, Endpoint(base_url=sb.endpoint_url + PREFIX, api_key=API_KEY)


@pytest.mark.parametrize(("name", "replay", "options"), CASES, indirect=["replay"])
async def test_real_harness_runs_tool_in_sandbox(
    sb_base: Path, name: str, replay: ReplayServer, options: dict[str, Any], tmp_path: Path
) -> None:
    async with installed_in_sandbox(name, replay, sb_base) as (harness, sb, endpoint):
        result, raw = await run_harness(
            harness, sb, endpoint, "Create hello.txt containing hi.", timeout_s=240, options=options
        )
        hello = sb.host_workspace / "hello.txt"
        assert result.ok, f"{result.error}\nSTDOUT:{raw.stdout[-3000:]}\nSTDERR:{raw.stderr[-3000:]}"
        assert (result.exit_code, result.final_message, result.timed_out) == (0, "done", False)
        assert hello.read_text() == "hi"
    assert replay.model_calls == 2
    assert all(r["path"].startswith(f"{PREFIX}/v1/") for r in replay.requests), replay.requests
    auth = [r["headers"].get("x-api-key") or r["headers"].get("authorization") for r in replay.requests]
    assert all(a in (API_KEY, f"Bearer {API_KEY}") for a in auth), auth


MCP_PROBE = """
import json, os, sys
open(os.path.join(os.environ["PROBE_DIR"], "mcp_started.txt"), "a").write("started\\n")
for line in sys.stdin:
    msg = json.loads(line)
    mid, method = msg.get("id"), msg.get("method")
    if mid is None:
        continue
    if method == "initialize":
        version = msg.get("params", {}).get("protocolVersion", "2025-06-18")
        info = {"name": "probe", "version": "1"}
        result = {"protocolVersion": version, "capabilities": {"tools": {}}, "serverInfo": info}
    elif method == "tools/list":
        schema = {"type": "object", "properties": {}}
        result = {"tools": [{"name": "hrl_probe", "description": "Probe tool.", "inputSchema": schema}]}
    elif method == "tools/call":
        result = {"content": [{"type": "text", "text": "probed"}]}
    else:
        reply = {"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": method}}
        print(json.dumps(reply), flush=True)
        continue
    print(json.dumps({"jsonrpc": "2.0", "id": mid, "result": result}), flush=True)
"""
# What the first model request must contain: the tool itself, or (Codex defers MCP tools behind
# `tool_search`) the server's tool namespace.
# OpenClaw also defers them, behind a catalog that names no tool: its test turns the deferral off.
MCP_CASES = [
    pytest.param("claude-code", "claude-code", "hrl_probe", {}, id="claude-code"),
    pytest.param("codex", "codex-responses", "mcp__probe", {}, id="codex"),
    pytest.param(
        "openclaw", "openclaw-responses", "hrl_probe", {"tool_search": False}, id="openclaw", marks=SLOW
    ),
]


@pytest.mark.parametrize(("name", "replay", "offered", "options"), MCP_CASES, indirect=["replay"])
async def test_real_harness_starts_mcp_server_inside_sandbox(
    sb_base: Path, name: str, replay: ReplayServer, offered: str, options: dict[str, Any], tmp_path: Path
) -> None:
    """The adapter's MCP config makes the harness start a stdio server inside the sandbox, offer its tool."""
    async with installed_in_sandbox(name, replay, sb_base) as (harness, sb, endpoint):
        (sb.host_home / "mcp_probe.py").write_text(MCP_PROBE)
        server = McpServer("probe", ["python3", f"{sb.home}/mcp_probe.py"], {"PROBE_DIR": sb.home})
        result, raw = await run_harness(
            harness,
            sb,
            endpoint,
            "Create hello.txt.",
            timeout_s=240,
            mcp_servers=[server],
            options=options,
        )
        assert result.ok, f"{result.error}\nSTDERR:{raw.stderr[-3000:]}"
        assert (sb.host_home / "mcp_started.txt").read_text().startswith("started")
        assert (sb.host_workspace / "hello.txt").read_text() == "hi"
    model_bodies = [r["body"] for r in replay.requests if r["path"].removeprefix(PREFIX) in STREAMS]
    assert offered in model_bodies[0]
