"""Cline CLI: its providers.json and settings, command line and JSON-event parsing; and (marked
`harness`) the real CLI solving a bundled task through the proxy with the scripted engine."""

from __future__ import annotations

import json
from pathlib import Path

from harness_solve import adapter_context, harness_test, solved

from harnessrl.harnesses import McpServer, get_harness
from harnessrl.sandbox import ExecResult

SETTINGS = Path(".cline/data/settings")


def test_cline_config_and_launch(tmp_path: Path) -> None:
    mcp = (McpServer("files", ["python3", "-m", "srv"], {"A": "1"}),)
    launch = get_harness("cline").prepare(adapter_context(tmp_path, mcp_servers=mcp))
    settings = {
        "provider": "openai-compatible",
        "apiKey": "tok",
        "model": "policy",
        "baseUrl": "http://127.0.0.1:18080/r/tok/v1",
        "contextWindow": 131072,
    }
    assert json.loads((tmp_path / SETTINGS / "providers.json").read_text()) == {
        "version": 1,
        "lastUsedProvider": "openai-compatible",
        "modes": {},
        "providers": {
            "openai-compatible": {
                "settings": settings,
                "updatedAt": "2026-01-01T00:00:00.000Z",
                "tokenSource": "manual",
            }
        },
    }
    assert json.loads((tmp_path / SETTINGS / "global-settings.json").read_text()) == {
        "telemetryOptOut": True,
        "autoUpdateEnabled": False,
    }
    assert json.loads((tmp_path / SETTINGS / "cline_mcp_settings.json").read_text()) == {
        "mcpServers": {"files": {"command": "python3", "args": ["-m", "srv"], "env": {"A": "1"}}}
    }
    assert launch.argv == [
        "/cache/h/node_modules/.bin/cline", "--json", "--auto-approve", "true", "-P", "openai-compatible",
        "-m", "policy", "do it",
    ]  # fmt: skip
    assert launch.env == {
        "CLINE_DIR": "/home/agent/.cline",
        "CLINE_DATA_DIR": "/home/agent/.cline/data",
        "IS_TEST": "true",
        "DO_NOT_TRACK": "1",
        "NO_COLOR": "1",
    }


def events(*items: object) -> str:
    return "\n".join(json.dumps(i) for i in items) + "\n"


def test_cline_parse() -> None:
    cline = get_harness("cline")
    done = {"type": "run_result", "finishReason": "completed", "iterations": 2, "text": "done\n"}
    out = events({"type": "hook_event", "hookEventName": "agent_start"}, {"type": "run_result", "text": "x"})
    out += "AI SDK Warning\n" + events(done)
    assert cline.parse(ExecResult(0, out, "", False, 1.0)).model_dump() == {
        "ok": True, "exit_code": 0, "final_message": "done", "timed_out": False, "error": "", "turns": 2,
    }  # fmt: skip
    too_long = "The request exceeds the model's context window (provider reported: prompt is too long)"
    error = {"type": "run_result", "finishReason": "error", "iterations": 1, "text": too_long}
    stderr = "Warning: AI SDK Warning\n" + events({"type": "error", "message": too_long})
    failed = cline.parse(ExecResult(1, events(error), stderr, False, 1.0))
    assert (failed.ok, failed.error, failed.final_message, failed.turns) == (
        False,
        f"error: {too_long}",
        "",
        1,
    )
    bare = cline.parse(ExecResult(1, events(error), "Error: 400\n", False, 1.0))
    assert (bare.ok, bare.error) == (False, "error: Error: 400")
    hostile = {"type": "run_result", "finishReason": ["completed"], "iterations": -1, "text": {"a": 1}}
    odd = cline.parse(ExecResult(0, events(hostile), "", False, 1.0))
    assert (odd.ok, odd.final_message, odd.turns) == (False, "", None)
    assert odd.error.startswith("no finish reason: ")
    nothing = cline.parse(ExecResult(1, "", "Error: no provider\n", False, 1.0))
    assert (nothing.ok, nothing.error, nothing.turns) == (False, "Error: no provider", None)


@harness_test
async def test_cline_solves_task_and_wrong_sequence_fails(tmp_path: Path) -> None:
    await solved("cline", tmp_path, "run_commands")
