"""Continue CLI (`cn`): its config, command line and output parsing; and (marked `harness`) the real CLI
solving a bundled task through the proxy with the scripted engine."""

from __future__ import annotations

from pathlib import Path

import yaml
from harness_solve import adapter_context, assert_plain_text_parse, harness_test, solved

from harnessrl.harnesses import McpServer, get_harness


def test_continue_config_and_launch(tmp_path: Path) -> None:
    mcp = (McpServer("files", ["python3", "-m", "srv"], {"A": "1"}),)
    launch = get_harness("continue").prepare(adapter_context(tmp_path, mcp_servers=mcp))
    cfg = yaml.safe_load((tmp_path / ".continue" / "config.yaml").read_text())
    assert cfg == {
        "name": "harnessrl",
        "version": "1.0.0",
        "schema": "v1",
        "models": [
            {
                "name": "policy",
                "provider": "openai",
                "model": "policy",
                "apiBase": "http://127.0.0.1:18080/r/tok/v1",
                "apiKey": "tok",
                "roles": ["chat", "edit", "apply"],
                "capabilities": ["tool_use"],
                "defaultCompletionOptions": {"contextLength": 131072},
            }
        ],
        "mcpServers": [{"name": "files", "command": "python3", "args": ["-m", "srv"], "env": {"A": "1"}}],
    }
    assert launch.argv == [
        "/cache/h/node_modules/.bin/cn", "-p", "--config", "/home/agent/.continue/config.yaml", "--auto",
        "do it",
    ]  # fmt: skip
    assert launch.env == {
        "CONTINUE_GLOBAL_DIR": "/home/agent/.continue",
        "CONTINUE_CLI_ENABLE_TELEMETRY": "0",
        "CONTINUE_METRICS_ENABLED": "0",
        "CONTINUE_CLI_AUTO_UPDATED": "true",
        "NO_COLOR": "1",
    }


def test_continue_parse() -> None:
    assert_plain_text_parse("continue")


@harness_test
async def test_continue_solves_task_and_wrong_sequence_fails(tmp_path: Path) -> None:
    await solved("continue", tmp_path, "Bash", stream=None)
