"""Gemini CLI: its settings file, command line and stream-json parsing; and (marked `harness`) the real
CLI solving a bundled task through the proxy's Gemini dialect with the scripted engine."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from harness_solve import adapter_context, harness_test, solved

from harnessrl.harnesses import McpServer, get_harness
from harnessrl.proxy.testing import scripted_proxy, turn_from_decision
from harnessrl.sandbox import ExecResult

MCP = (McpServer(name="files", command=["python3", "-m", "srv"], env={"A": "1"}),)


def test_gemini_cli_settings_and_launch(tmp_path: Path) -> None:
    launch = get_harness("gemini-cli").prepare(adapter_context(tmp_path, mcp_servers=MCP))
    assert launch.argv == [
        "/cache/h/node_modules/.bin/gemini", "-p", "do it", "--output-format", "stream-json", "--yolo",
        "--model", "gemini-2.5-pro",
    ]  # fmt: skip
    assert (launch.cwd, launch.env["GOOGLE_GEMINI_BASE_URL"]) == (
        "/workspace",
        "http://127.0.0.1:18080/r/tok",
    )
    assert (launch.env["GEMINI_API_KEY"], launch.env["GEMINI_CLI_NO_RELAUNCH"]) == ("tok", "true")
    settings = json.loads((tmp_path / ".gemini" / "settings.json").read_text())
    assert settings["security"] == {
        "auth": {"selectedType": "gemini-api-key"},
        "folderTrust": {"enabled": False},
    }
    assert settings["privacy"] == {"usageStatisticsEnabled": False}
    assert settings["telemetry"] == {"enabled": False, "logPrompts": False}
    assert settings["general"] == {
        "enableAutoUpdate": False,
        "enableAutoUpdateNotification": False,
        "checkpointing": {"enabled": False},
    }
    assert "modelConfigs" not in settings  # the CLI's own generation config for the model
    assert settings["mcpServers"] == {
        "files": {"command": "python3", "args": ["-m", "srv"], "env": {"A": "1"}}
    }


def events(*items: dict[str, object]) -> str:
    return "\n".join(json.dumps(i) for i in items) + "\n"


def test_gemini_cli_parse() -> None:
    gemini = get_harness("gemini-cli")
    out = events(
        {"type": "init", "model": "gemini-2.5-pro"},
        {"type": "message", "role": "user", "content": "do it"},
        {"type": "message", "role": "assistant", "content": "Let me look.", "delta": True},
        {"type": "tool_use", "tool_name": "run_shell_command", "parameters": {"command": "ls"}},
        {"type": "tool_result", "status": "success", "output": ""},
        {"type": "message", "role": "assistant", "content": "do", "delta": True},
        {"type": "message", "role": "assistant", "content": "ne", "delta": True},
        {"type": "result", "status": "success", "stats": {}},
    )
    assert gemini.parse(ExecResult(0, out, "", False, 1.0)).model_dump() == {
        "ok": True, "exit_code": 0, "final_message": "done", "timed_out": False, "error": "", "turns": 2,
    }  # fmt: skip
    failed = events(
        {"type": "error", "severity": "error", "message": "[API Error: 400 prompt is too long]"},
        {"type": "result", "status": "error", "error": {"type": "Error", "message": "turn failed"}},
    )
    parsed = gemini.parse(ExecResult(1, failed, "", False, 1.0))
    assert (parsed.ok, parsed.error) == (False, "[API Error: 400 prompt is too long]; turn failed")
    crashed = gemini.parse(ExecResult(-9, "not json", "killed\n", True, 1.0))
    assert (crashed.ok, crashed.timed_out, crashed.error, crashed.turns) == (False, True, "killed", None)


@harness_test
async def test_gemini_cli_solves_task_and_wrong_sequence_fails(tmp_path: Path) -> None:
    await solved("gemini-cli", tmp_path, "run_shell_command", stream=None, dialect="gemini")


@pytest.mark.parametrize("folder", ["gemini-cli", "pi-gemini"])
def test_captured_gemini_traffic_splices_through_the_proxy(shared_fixtures: Path, folder: str) -> None:
    """The two captured calls (Gemini CLI's and pi's, streamed with `alt=sse`) sent to a live proxy as
    they were captured: both answered, call 2 spliced onto call 1 (the CLI's own functionCall id and
    thoughtSignature do not break the prefix)."""
    captured = [
        json.loads(p.read_text())
        for p in sorted((shared_fixtures / "harness-traffic" / folder).glob("*.json"))
    ]
    server = scripted_proxy([turn_from_decision(c["reply"]["decision"]) for c in captured]).start()
    try:
        info = server.server.deps.sessions.open(f"replay-{folder}")
        for c in captured:
            headers = {"content-type": "application/json", "x-goog-api-key": info.token}
            resp = httpx.post(info.base_url + c["path"], json=c["body"], headers=headers, timeout=60)
            assert resp.status_code == 200, resp.text
            assert resp.headers["content-type"].startswith("text/event-stream")
        first, second = server.server.deps.sessions.calls(f"replay-{folder}")
    finally:
        server.stop()
    assert [first.dialect, second.dialect] == ["gemini", "gemini"]
    assert (second.render, second.spliced_from) == ("spliced", first.call_id)
    assert (
        second.prompt_ids[: len(first.prompt_ids) + len(first.output_ids)]
        == first.prompt_ids + first.output_ids
    )
