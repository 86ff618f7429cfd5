"""Kimi CLI (PyPI, on the Python 3.13 runtime, its lockfile leaving out `ripgrepy`): its config,
command line and output parsing; and (marked `harness`) the real agent solving a bundled task through
the proxy with the scripted engine."""

from __future__ import annotations

import json
from pathlib import Path

from harness_solve import adapter_context, assert_plain_text_parse, harness_test, solved

from harnessrl.harnesses import McpServer, get_harness
from harnessrl.harnesses.install import LOCKS
from harnessrl.rollout.prompt_check import first_prompt
from harnessrl.sandbox import ExecResult

KIMI_TOOLS = [
    "Agent", "AskUserQuestion", "SetTodoList", "Shell", "TaskList", "TaskOutput", "TaskStop", "ReadFile",
    "Glob", "Grep", "WriteFile", "StrReplaceFile", "FetchURL", "ExitPlanMode", "EnterPlanMode",
]  # fmt: skip


def test_kimi_config_and_launch(tmp_path: Path) -> None:
    kimi = get_harness("kimi-cli")
    assert (kimi.installer, kimi.python) == ("pypi", "3.13")
    launch = kimi.prepare(adapter_context(tmp_path))
    assert json.loads((tmp_path / ".kimi" / "config.json").read_text()) == {
        "default_model": "harnessrl",
        "models": {"harnessrl": {"provider": "harnessrl", "model": "policy", "max_context_size": 131072}},
        "providers": {
            "harnessrl": {
                "type": "openai_legacy",
                "base_url": "http://127.0.0.1:18080/r/tok/v1",
                "api_key": "tok",
            }
        },
        "telemetry": False,
    }
    assert launch.argv == [
        "/cache/h/bin/kimi", "--print", "--yolo", "--config-file", "/home/agent/.kimi/config.json",
        "-p", "do it", "--output-format", "text", "--final-message-only",
    ]  # fmt: skip
    assert launch.env["KIMI_SHARE_DIR"] == "/home/agent/.kimi"
    assert "/cache/h" not in launch.env["PATH"]


def test_kimi_mcp_servers_go_on_its_command_line(tmp_path: Path) -> None:
    mcp = (McpServer("files", ["python3", "-m", "srv"], {"K": "v"}),)
    launch = get_harness("kimi-cli").prepare(adapter_context(tmp_path, mcp_servers=mcp))
    assert launch.argv[-2] == "--mcp-config"
    assert json.loads(launch.argv[-1]) == {
        "mcpServers": {"files": {"command": "python3", "args": ["-m", "srv"], "env": {"K": "v"}}}
    }


def test_kimi_lockfile_leaves_out_ripgrepy_and_says_why() -> None:
    text = (LOCKS / "kimi-cli" / "requirements.txt").read_text()
    assert "\n# left out: ripgrepy (only an sdist on PyPI" in text
    assert "\nripgrepy==" not in text and "\nkimi-cli==1.51.0 \\\n" in text


def test_kimi_parse_hostile_output() -> None:
    assert_plain_text_parse("kimi-cli")  # "done"; a 400 on stderr
    hung = get_harness("kimi-cli").parse(ExecResult(-9, "\x00" * 5, "", True, 240.0))
    assert (hung.ok, hung.timed_out) == (False, True)


@harness_test
async def test_kimi_solves_task_and_wrong_sequence_fails(tmp_path: Path) -> None:
    good = await solved("kimi-cli", tmp_path, "Shell", stream=None, spliced=False)
    prompt = first_prompt(good)
    assert prompt is not None and prompt.tools == KIMI_TOOLS
