"""gptme (a Python harness from PyPI): its conversation config, command line and JSON-line parsing;
and (marked `harness`) the real gptme solving a bundled task through the proxy with the scripted
engine: native `shell` calls, finishing with its `complete` tool, no side call to name the
conversation."""

from __future__ import annotations

import tomllib
from pathlib import Path

from harness_solve import adapter_context, harness_test, solve_and_fail

from harnessrl.harnesses import McpServer, get_harness
from harnessrl.sandbox import ExecResult


def test_gptme_config_and_launch(tmp_path: Path) -> None:
    launch = get_harness("gptme").prepare(adapter_context(tmp_path))
    chat = (tmp_path / ".gptme" / "logs" / "harnessrl" / "config.toml").read_text()
    assert chat == '[chat]\nname = "harnessrl"\nworkspace = "/workspace"\n'
    assert launch.argv == [
        "/cache/h/bin/gptme", "-n", "--name", "harnessrl", "--output-format", "json",
        "--tool-format", "tool", "-m", "local/policy", "--", "do it",
    ]  # fmt: skip
    assert {k: v for k, v in launch.env.items() if k != "PATH"} == {
        "OPENAI_BASE_URL": "http://127.0.0.1:18080/r/tok/v1",
        "OPENAI_API_KEY": "tok",
        "GPTME_LOGS_HOME": "/home/agent/.gptme/logs",
        "TOOL_ALLOWLIST": "shell",
        "GPTME_TIKTOKEN_TIMEOUT": "0",
        "PYTHONDONTWRITEBYTECODE": "1",
        "NO_COLOR": "1",
    }
    assert "/cache/h" not in launch.env["PATH"] and launch.cwd == "/workspace"


def test_gptme_leaves_mcp_servers_out(tmp_path: Path) -> None:
    """Its allowlist would have to name each server's tools (`<server>.*`), and stops on a server
    without any: the servers are not configured, its tools stay `shell` (and `complete`)."""
    mcp = (McpServer("files", ["python3", "-m", "srv"], {"K": "v"}),)
    launch = get_harness("gptme").prepare(adapter_context(tmp_path, mcp_servers=mcp))
    chat = tomllib.loads((tmp_path / ".gptme" / "logs" / "harnessrl" / "config.toml").read_text())
    assert chat == {"chat": {"name": "harnessrl", "workspace": "/workspace"}}
    assert launch.env["TOOL_ALLOWLIST"] == "shell"


def test_gptme_parse() -> None:
    gptme = get_harness("gptme")
    out = (
        '{"type": "message", "role": "user", "content": "do it"}\n'
        '{"type": "message", "role": "assistant", "content": "\\n@shell(c1): {}"}\n'
        "noise that is not JSON\n"
        '{"type": "message", "role": "assistant", "content": "done\\n@complete(c2): {}"}\n'
        '{"type": "message", "role": "system", "content": "Task complete. Autonomous session finished."}\n'
    )
    assert gptme.parse(ExecResult(0, out, "", False, 1.0)).model_dump() == {
        "ok": True, "exit_code": 0, "final_message": "done", "timed_out": False, "error": "", "turns": 2,
    }  # fmt: skip
    failed = gptme.parse(
        ExecResult(1, '{"role": "assistant", "content": 7}\n[1]\n', "Error: 400\n", False, 1.0)
    )
    assert (failed.ok, failed.final_message, failed.error, failed.turns) == (False, "7", "Error: 400", 1)
    nothing = gptme.parse(ExecResult(0, '{"role": ["assistant"]}\n\ud800\n', "", False, 1.0))
    assert (nothing.ok, nothing.final_message, nothing.turns) == (False, "", None)


@harness_test
async def test_gptme_solves_task_and_wrong_sequence_fails(tmp_path: Path) -> None:
    good, _ = await solve_and_fail("gptme", tmp_path)  # 1.0; the wrong one < 1.0
    assert [c.dialect for c in good.calls] == ["openai_chat", "openai_chat"]
    assert [t.name for c in good.calls for t in c.tool_calls] == ["shell", "complete"]
    assert all("stream" in c.tags for c in good.calls)
    assert good.calls[0].tool_names == ["complete", "shell"]
    assert good.calls[1].render == "spliced" and good.calls[1].spliced_from == good.calls[0].call_id
