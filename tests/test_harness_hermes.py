"""Hermes Agent (a Python harness from PyPI): its config, command line and output parsing; and (marked
`harness`) the real agent solving a bundled task through the proxy with the scripted engine."""

from __future__ import annotations

import json
from pathlib import Path

from harness_solve import adapter_context, assert_plain_text_parse, harness_test, solved

from harnessrl.harnesses import get_harness
from harnessrl.rollout.prompt_check import first_prompt

HERMES_TOOLS = [
    "clarify", "cronjob", "delegate_task", "execute_code", "memory", "patch", "process", "read_file",
    "search_files", "session_search", "skill_manage", "skill_view", "skills_list", "terminal", "todo",
    "vision_analyze", "write_file",
]  # fmt: skip


def test_hermes_config_and_launch(tmp_path: Path) -> None:
    launch = get_harness("hermes").prepare(adapter_context(tmp_path))
    assert json.loads((tmp_path / ".hermes" / "config.yaml").read_text()) == {
        "model": {
            "provider": "custom",
            "default": "policy",
            "base_url": "http://127.0.0.1:18080/r/tok/v1",
            "api_key": "tok",
            "context_length": 131072,
        },
        "security": {"tirith_enabled": False},
    }
    assert launch.argv == ["/cache/h/bin/hermes", "chat", "-q", "do it", "-Q", "--yolo"]
    assert launch.env["HERMES_HOME"] == "/home/agent/.hermes"
    assert "/cache/h" not in launch.env["PATH"]  # its venv stays off the agent commands' PATH


def test_hermes_parse() -> None:
    assert_plain_text_parse("hermes")


@harness_test
async def test_hermes_solves_task_and_wrong_sequence_fails(tmp_path: Path) -> None:
    good = await solved("hermes", tmp_path, "terminal", stream=None)
    # the same 17 tools on every machine: no `browser_*` ones, whether or not the host has a chromium
    # (the sandbox's PATH is the fixed list of `sandbox/programs.txt`)
    prompt = first_prompt(good)
    assert prompt is not None and prompt.tools == HERMES_TOOLS
