"""Qwen Code end to end: a bundled task solved through the real CLI (reward 1.0), a wrong sequence
scoring below 1.0 (`harness_solve`). It speaks OpenAI Chat (streamed), sends exact prefixes between
calls (the proxy splices them), and its shell tool is `run_shell_command(command)`."""

from __future__ import annotations

from pathlib import Path

from harness_solve import MARKS, solve_and_fail

pytestmark = MARKS


async def test_qwen_code_solves_task_and_wrong_sequence_fails(tmp_path: Path) -> None:
    good, _ = await solve_and_fail("qwen-code", tmp_path)
    assert [c.dialect for c in good.calls] == ["openai_chat", "openai_chat"]
    assert all("stream" in c.tags for c in good.calls)
    assert good.calls[0].tool_calls[0].name == "run_shell_command"
    assert good.calls[1].render == "spliced" and good.calls[1].spliced_from == good.calls[0].call_id
    assert good.final_message == "done"
