"""Grok CLI (`grok`): its settings, command line and output parsing; and (marked `harness`) the real CLI
solving a bundled task through the proxy with the scripted engine (OpenAI Chat, not streamed)."""

from __future__ import annotations

import json
from pathlib import Path

from harness_solve import adapter_context, harness_test, solved

from harnessrl.harnesses import McpServer, get_harness
from harnessrl.sandbox import ExecResult


def test_grok_cli_settings_and_launch(tmp_path: Path) -> None:
    mcp = (McpServer("files", ["python3", "-m", "srv"]),)  # read only from the workspace: not started
    launch = get_harness("grok-cli").prepare(adapter_context(tmp_path, mcp_servers=mcp))
    assert json.loads((tmp_path / ".grok" / "user-settings.json").read_text()) == {
        "apiKey": "tok",
        "baseURL": "http://127.0.0.1:18080/r/tok/v1",
        "defaultModel": "policy",
        "models": ["policy"],
        "settingsVersion": 2,
    }
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == ["user-settings.json"]
    assert launch.argv == ["/cache/h/node_modules/.bin/grok", "-p", "do it", "-m", "policy"]
    assert launch.env == {"NO_COLOR": "1"}
    assert launch.cwd == "/workspace"


def test_grok_cli_says_a_version_of_its_own() -> None:
    """`grok --version` prints the 1.0.1 written into its CLI, not the package's 0.0.34: `harnessrl
    doctor` looks for `says_version`; the other harnesses print their package version."""
    assert (get_harness("grok-cli").version, get_harness("grok-cli").says_version) == ("0.0.34", "1.0.1")
    assert get_harness("cline").says_version is None and get_harness("nanocoder").says_version is None


def lines(*messages: object) -> str:
    return "\n".join(json.dumps(m) for m in messages) + "\n"


def test_grok_cli_parse() -> None:
    grok = get_harness("grok-cli")
    call = {"role": "assistant", "content": "Using tools to help you...", "tool_calls": [{"id": "1"}]}
    out = lines({"role": "user", "content": "do it"}, call, {"role": "tool", "content": "x"})
    out += "noise\n" + lines({"role": "assistant", "content": "done\n"})
    assert grok.parse(ExecResult(0, out, "", False, 1.0)).model_dump() == {
        "ok": True, "exit_code": 0, "final_message": "done", "timed_out": False, "error": "", "turns": 2,
    }  # fmt: skip
    failed = grok.parse(
        ExecResult(1, lines({"role": "assistant", "content": "Error: Grok API error: 400"}), "", False, 1.0)
    )
    assert (failed.ok, failed.error, failed.final_message, failed.exit_code) == (
        False, "Error: Grok API error: 400", "", 1,
    )  # fmt: skip
    call_failed = "Sorry, I encountered an error: Grok API error: 400 prompt is too long"
    out = lines({"role": "user", "content": "do it"}, {"role": "assistant", "content": call_failed})
    failed = grok.parse(ExecResult(0, out, "", False, 1.0))
    assert (failed.ok, failed.error, failed.final_message, failed.exit_code) == (False, call_failed, "", 0)
    limit = "Maximum tool execution rounds reached. Stopping to prevent infinite loops."
    stopped = grok.parse(
        ExecResult(0, lines(call, {"role": "tool"}, {"role": "assistant", "content": limit}), "", False, 1.0)
    )
    assert (stopped.ok, stopped.error) == (False, limit)
    # the model's own text that starts with "Error: " on a clean exit is an answer
    said = grok.parse(
        ExecResult(0, lines({"role": "assistant", "content": "Error: none found"}), "", False, 1.0)
    )
    assert (said.ok, said.final_message) == (True, "Error: none found")
    hostile = '{"role": "assistant", "content": ["x"]}\n{"role": "assistant", "content": 1e999999}\n'
    weird = grok.parse(
        ExecResult(0, hostile + lines({"role": "assistant", "content": "\ud800"}), "", False, 1.0)
    )
    assert (weird.ok, weird.final_message, weird.turns) == (True, "?", 3)
    nothing = grok.parse(ExecResult(137, "", "Killed\n", True, 1.0))
    assert (nothing.ok, nothing.timed_out, nothing.error, nothing.turns) == (False, True, "Killed", None)


@harness_test
async def test_grok_cli_solves_task_and_wrong_sequence_fails(tmp_path: Path) -> None:
    await solved("grok-cli", tmp_path, "bash", stream=False)
