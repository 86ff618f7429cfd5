"""Factory Droid: its BYOK settings, command line and switches, its `-o json` result parsing on hostile
output; and (marked `harness`) the real CLI solving a bundled task through the proxy with the
scripted engine, with no Factory login."""

from __future__ import annotations

import json
from pathlib import Path

from harness_solve import adapter_context, harness_test, solved

from harnessrl.harnesses import McpServer, get_harness
from harnessrl.sandbox import ExecResult


def test_droid_settings_and_launch(tmp_path: Path) -> None:
    mcp = (McpServer("files", ["python3", "-m", "srv"], {"A": "1"}),)
    launch = get_harness("droid").prepare(adapter_context(tmp_path, mcp_servers=mcp))
    settings = json.loads((tmp_path / ".factory" / "settings.json").read_text())
    assert settings == {
        "customModels": [
            {
                "model": "policy",
                "displayName": "policy",
                "baseUrl": "http://127.0.0.1:18080/r/tok/v1",
                "apiKey": "${HARNESSRL_API_KEY}",
                "provider": "generic-chat-completion-api",
                "maxOutputTokens": 8192,
                "maxContextLimit": 131072,
            }
        ]
    }
    assert json.loads((tmp_path / ".factory" / "mcp.json").read_text()) == {
        "mcpServers": {
            "files": {"type": "stdio", "command": "python3", "args": ["-m", "srv"], "env": {"A": "1"}}
        }
    }
    assert launch.argv == [
        "/cache/h/node_modules/@factory/cli-linux-x64/bin/droid", "exec", "--skip-permissions-unsafe",
        "-o", "json", "-m", "custom:policy", "do it",
    ]  # fmt: skip
    assert launch.env == {
        "HARNESSRL_API_KEY": "tok",
        "FACTORY_AIRGAP_ENABLED": "1",
        "FACTORY_DROID_AUTO_UPDATE_ENABLED": "false",
        "FACTORY_DISABLE_KEYRING": "1",
        "NO_COLOR": "1",
    }
    assert launch.cwd == "/workspace"
    get_harness("droid").prepare(adapter_context(tmp_path, options={"provider": "anthropic"}))
    anthropic = json.loads((tmp_path / ".factory" / "settings.json").read_text())["customModels"][0]
    assert (anthropic["provider"], anthropic["baseUrl"]) == ("anthropic", "http://127.0.0.1:18080/r/tok")


def test_droid_parse_hostile_output() -> None:
    droid = get_harness("droid")
    ok = {"type": "result", "subtype": "success", "is_error": False, "num_turns": 2, "result": "done"}
    parsed = droid.parse(ExecResult(0, "noise\n{broken\n" + json.dumps(ok), "", False, 1.0))
    assert (parsed.ok, parsed.final_message, parsed.turns) == (True, "done", 2)
    bad = {"type": "result", "subtype": "error", "is_error": True, "num_turns": "x", "result": ["no"]}
    failed = droid.parse(ExecResult(1, json.dumps(bad), "Error: 401\n", False, 1.0))
    assert (failed.ok, failed.turns) == (False, None) and failed.error
    nothing = droid.parse(ExecResult(1, "", "Authentication failed\n", False, 1.0))
    assert (nothing.ok, nothing.error) == (False, "Authentication failed")


@harness_test
async def test_droid_solves_task_and_wrong_sequence_fails(tmp_path: Path) -> None:
    await solved("droid", tmp_path, "Execute", stream=None)
