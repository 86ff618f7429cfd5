"""Kilo Code CLI: its config, command line, switches and JSON-event parsing; and (marked `harness`) the
real CLI solving a bundled task through the proxy with the scripted engine."""

from __future__ import annotations

import json
from pathlib import Path

from harness_solve import adapter_context, harness_test, solved

from harnessrl.harnesses import McpServer, get_harness
from harnessrl.sandbox import ExecResult


def test_kilo_config_and_launch(tmp_path: Path) -> None:
    mcp = (McpServer("files", ["python3", "-m", "srv"], {"A": "1"}),)
    launch = get_harness("kilo").prepare(adapter_context(tmp_path, mcp_servers=mcp))
    cfg = json.loads((tmp_path / ".config" / "kilo" / "kilo.json").read_text())
    assert cfg["provider"] == {
        "harnessrl": {
            "npm": "@ai-sdk/openai-compatible",
            "name": "harnessrl",
            "options": {"baseURL": "http://127.0.0.1:18080/r/tok/v1", "apiKey": "{env:HARNESSRL_API_KEY}"},
            "models": {
                "policy": {"name": "policy", "tool_call": True, "limit": {"context": 131072, "output": 8192}}
            },
        }
    }
    assert (cfg["model"], cfg["small_model"], cfg["autoupdate"], cfg["share"]) == (
        "harnessrl/policy",
        "harnessrl/policy",
        False,
        "disabled",
    )
    assert cfg["mcp"] == {
        "files": {
            "type": "local",
            "command": ["python3", "-m", "srv"],
            "environment": {"A": "1"},
            "enabled": True,
        }
    }
    assert launch.argv == [
        "/cache/h/node_modules/.bin/kilo", "run", "--format", "json", "--auto", "-m", "harnessrl/policy",
        "do it",
    ]  # fmt: skip
    assert launch.env["KILO_CONFIG"] == "/home/agent/.config/kilo/kilo.json"
    assert launch.env["HARNESSRL_API_KEY"] == "tok"
    for switch in (
        "KILO_DISABLE_AUTOUPDATE",
        "KILO_DISABLE_MODELS_FETCH",
        "KILO_DISABLE_SHARE",
        "KILO_NO_DAEMON",
    ):
        assert launch.env[switch] == "1"
    assert launch.env["KILO_TELEMETRY_LEVEL"] == "off"


def test_kilo_parse() -> None:
    kilo = get_harness("kilo")
    events = [
        {"type": "step_start", "part": {"type": "step-start"}},
        {"type": "tool_use", "part": {"type": "tool", "tool": "bash"}},
        {"type": "step_finish", "part": {"reason": "tool-calls"}},
        {"type": "step_start", "part": {"type": "step-start"}},
        {"type": "text", "part": {"type": "text", "text": "done\n"}},
        {"type": "step_finish", "part": {"reason": "stop"}},
    ]
    out = "\n".join(json.dumps(e) for e in events)
    assert kilo.parse(ExecResult(0, out, "", False, 1.0)).model_dump() == {
        "ok": True, "exit_code": 0, "final_message": "done", "timed_out": False, "error": "", "turns": 2,
    }  # fmt: skip
    error = {"type": "error", "error": {"name": "APIError", "data": {"message": "400 prompt is too long"}}}
    parsed = kilo.parse(ExecResult(0, json.dumps(events[0]) + "\n" + json.dumps(error), "", False, 1.0))
    assert (parsed.ok, parsed.error) == (False, "400 prompt is too long")
    nothing = kilo.parse(ExecResult(0, "", "no provider\n", False, 1.0))  # exit 0 but no step: not ok
    assert (nothing.ok, nothing.error) == (False, "no provider")


@harness_test
async def test_kilo_solves_task_and_wrong_sequence_fails(tmp_path: Path) -> None:
    await solved("kilo", tmp_path, "bash", stream=None)
