"""GitHub Copilot CLI in its custom-provider (BYOK, offline) mode: its environment, command line and
JSONL parsing; and (marked `harness`) the real CLI solving a bundled task through the proxy with the
scripted engine (Chat Completions in the default run, Responses `slow`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from harness_solve import adapter_context, harness_test, solved

from harnessrl.harnesses import McpServer, get_harness
from harnessrl.sandbox import ExecResult


def test_copilot_launch(tmp_path: Path) -> None:
    mcp = (McpServer("files", ["python3", "-m", "srv"], {"A": "1"}),)
    launch = get_harness("copilot").prepare(adapter_context(tmp_path, mcp_servers=mcp))
    assert launch.argv == [
        "/cache/h/node_modules/.bin/copilot", "-p", "do it", "--allow-all", "--output-format", "json",
        "--no-auto-update", "--disable-builtin-mcps", "--disable-client-telemetry", "--model", "policy",
    ]  # fmt: skip
    assert launch.env == {
        "COPILOT_HOME": "/home/agent/.copilot",
        "COPILOT_OFFLINE": "true",
        "COPILOT_AUTO_UPDATE": "false",
        "COPILOT_PROVIDER_BASE_URL": "http://127.0.0.1:18080/r/tok/v1",
        "COPILOT_PROVIDER_TYPE": "openai",
        "COPILOT_PROVIDER_API_KEY": "tok",
        "COPILOT_PROVIDER_WIRE_API": "completions",
        "COPILOT_PROVIDER_MAX_PROMPT_TOKENS": "131072",
        "COPILOT_PROVIDER_MAX_OUTPUT_TOKENS": "8192",
        "COPILOT_MODEL": "policy",
        "NO_COLOR": "1",
    }
    assert json.loads((tmp_path / ".copilot" / "mcp-config.json").read_text()) == {
        "mcpServers": {
            "files": {
                "type": "local",
                "command": "python3",
                "args": ["-m", "srv"],
                "env": {"A": "1"},
                "tools": ["*"],
            }
        }
    }
    responses = get_harness("copilot").prepare(adapter_context(tmp_path, options={"wire_api": "responses"}))
    assert responses.env["COPILOT_PROVIDER_WIRE_API"] == "responses"
    with pytest.raises(ValueError, match="copilot wire_api must be one of"):
        get_harness("copilot").check_options({"wire_api": "grpc"})


def test_copilot_parse() -> None:
    copilot = get_harness("copilot")
    events = [
        {"type": "session.info", "data": {"message": "starting"}},
        {"type": "assistant.message", "data": {"content": "", "toolRequests": [{"name": "bash"}]}},
        {"type": "tool.execution_complete", "data": {"success": True}},
        {"type": "assistant.message", "data": {"content": "done", "toolRequests": []}},
        {"type": "result", "exitCode": 0, "usage": {}},
    ]
    out = "\n".join(json.dumps(e) for e in events)
    assert copilot.parse(ExecResult(0, out, "", False, 1.0)).model_dump() == {
        "ok": True, "exit_code": 0, "final_message": "done", "timed_out": False, "error": "", "turns": 2,
    }  # fmt: skip
    failed = [
        {"type": "session.error", "data": {"errorType": "query", "message": "prompt too long"}},
        {"type": "result", "exitCode": 1},
    ]
    parsed = copilot.parse(ExecResult(1, "\n".join(json.dumps(e) for e in failed), "", False, 1.0))
    assert (parsed.ok, parsed.error, parsed.turns) == (False, "prompt too long", None)
    crashed = copilot.parse(ExecResult(-9, "", "Package extraction failed\n", True, 1.0))
    assert (crashed.ok, crashed.timed_out, crashed.error) == (False, True, "Package extraction failed")


@harness_test
@pytest.mark.parametrize(
    ("wire", "dialect"),
    [("completions", "openai_chat"), pytest.param("responses", "openai_responses", marks=pytest.mark.slow)],
)
async def test_copilot_solves_task_and_wrong_sequence_fails(tmp_path: Path, wire: str, dialect: str) -> None:
    await solved("copilot", tmp_path, "bash", {"wire_api": wire}, stream=None, dialect=dialect)
