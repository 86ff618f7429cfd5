"""Each real harness solves a bundled task end to end: unmodified CLI in a bubblewrap sandbox, its
model calls going to the proxy, the scripted engine replaying a known-good action sequence (the
task's reference as one shell tool call, then "done"), the checker scoring the final workspace in
its own sandbox. A wrong action sequence through the same path scores below 1.0."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from harness_solve import solve_and_fail  # the shared body of the per-harness tests

pytestmark = [
    pytest.mark.harness,
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed"),
    pytest.mark.skipif(shutil.which("npm") is None, reason="npm is needed to install the harnesses"),
]


@pytest.mark.parametrize("harness", ["claude-code", "codex", "openclaw"])
async def test_harness_solves_task_and_wrong_sequence_fails(harness: str, tmp_path: Path) -> None:
    good, _ = await solve_and_fail(harness, tmp_path)  # rewards 1.0 and below 1.0, both ok
    assert len(good.calls) >= 2 and good.calls[0].tool_calls and good.calls[0].tool_calls[0].arguments
    # Consecutive calls of these harnesses extend each other: the proxy spliced the recorded ids.
    assert good.calls[1].render == "spliced" and good.calls[1].spliced_from == good.calls[0].call_id
