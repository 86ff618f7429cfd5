"""Mistral Vibe (PyPI, on the Python 3.13 runtime): its config, command line and output parsing; and
(marked `harness`) the real agent solving a bundled task through the proxy with the scripted engine."""

from __future__ import annotations

from pathlib import Path

from harness_solve import adapter_context, assert_plain_text_parse, harness_test, solved

from harnessrl.harnesses import McpServer, get_harness
from harnessrl.rollout.prompt_check import first_prompt
from harnessrl.sandbox import ExecResult

VIBE_TOOLS = [
    "search_tool_functions", "run_typescript", "wait", "read_file", "write_file", "edit", "bash", "skill",
    "todo", "unified_harness_scratchpad",
]  # fmt: skip


def test_vibe_config_and_launch(tmp_path: Path) -> None:
    vibe = get_harness("mistral-vibe")
    assert (vibe.installer, vibe.python) == ("pypi", "3.13")
    launch = vibe.prepare(adapter_context(tmp_path))
    assert (tmp_path / ".vibe" / "config.toml").read_text() == (
        'active_model = "harnessrl"\n'
        "enable_telemetry = false\n"
        "enable_update_checks = false\n"
        "enable_auto_update = false\n"
        "enable_notifications = false\n"
        "enable_connectors = false\n"
        "experimental_enable_model_catalog = false\n"
        "include_commit_signature = false\n"
        "\n"
        "[[providers]]\n"
        'name = "harnessrl"\n'
        'api_base = "http://127.0.0.1:18080/r/tok/v1"\n'
        'api_key_env_var = "HARNESSRL_API_KEY"\n'
        'backend = "generic"\n'
        "\n"
        "[[models]]\n"
        'name = "policy"\n'
        'provider = "harnessrl"\n'
        'alias = "harnessrl"\n'
        "max_context_length = 131072\n"
    )
    assert launch.argv == [
        "/cache/h/bin/vibe", "-p", "do it", "--output", "text", "--agent", "auto-approve",
    ]  # fmt: skip
    assert launch.env["VIBE_HOME"] == "/home/agent/.vibe"
    assert launch.env["HARNESSRL_API_KEY"] == "tok"
    assert "/cache/h" not in launch.env["PATH"]  # its venv stays off the agent commands' PATH


def test_vibe_mcp_servers_are_stdio_entries_of_its_config(tmp_path: Path) -> None:
    mcp = (McpServer("files", ["python3", "-m", "srv"], {"K": "v"}),)
    get_harness("mistral-vibe").prepare(adapter_context(tmp_path, mcp_servers=mcp))
    text = (tmp_path / ".vibe" / "config.toml").read_text()
    assert text.endswith(
        '\n[[mcp_servers]]\nname = "files"\ntransport = "stdio"\ncommand = ["python3", "-m", "srv"]\n'
        'env = { "K" = "v" }\n'
    )


def test_vibe_parse_hostile_output() -> None:
    assert_plain_text_parse("mistral-vibe")  # "done"; a 400 on stderr
    vibe = get_harness("mistral-vibe")
    failed = vibe.parse(ExecResult(1, "\ud800partial", "Error: 400\n", False, 1.0))
    assert (failed.ok, failed.error, failed.final_message) == (False, "Error: 400", "?partial")
    hung = vibe.parse(ExecResult(-9, "", "", True, 240.0))
    assert (hung.ok, hung.timed_out, hung.final_message) == (False, True, "")


@harness_test
async def test_vibe_solves_task_and_wrong_sequence_fails(tmp_path: Path) -> None:
    good = await solved("mistral-vibe", tmp_path, "bash", stream=None, spliced=False)
    prompt = first_prompt(good)
    assert prompt is not None and prompt.tools == VIBE_TOOLS
