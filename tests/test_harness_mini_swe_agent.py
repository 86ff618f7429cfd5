"""mini-swe-agent end to end, the first Python harness: a bundled task solved through the real CLI
(reward 1.0), a wrong sequence scoring below 1.0 (`harness_solve`). It has no native tools: the
scripted engine answers with ```mswea_bash_command text blocks and finishes with its submit command;
OpenAI Chat, not streamed, exact prefixes between calls (spliced). Its venv, like the npm installs,
is read-only inside the sandbox."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from harness_solve import MARKS, probe_installs, solve_and_fail

from harnessrl.harnesses import get_harness

pytestmark = MARKS


async def test_mini_swe_agent_solves_task_and_wrong_sequence_fails(tmp_path: Path) -> None:
    good, bad = await solve_and_fail("mini-swe-agent", tmp_path)
    assert [c.dialect for c in good.calls] == ["openai_chat", "openai_chat"]
    assert not any("stream" in c.tags for c in good.calls)
    assert not any(c.tool_calls for c in good.calls)  # text actions only
    assert good.calls[0].text == "```mswea_bash_command\nprintf 'Hello, harness!\\n' > hello.txt\n```"
    assert good.calls[1].render == "spliced" and good.calls[1].spliced_from == good.calls[0].call_id
    assert (good.exit_code, bad.exit_code) == (0, 0)


@pytest.mark.security
async def test_python_harness_install_is_read_only_in_the_sandbox(sb_base: Path) -> None:
    """What the sandbox's uid can do to the venv is what it can do to an npm install: read and run
    it, never write it (both lie under the one read-only harness bind)."""
    venv = await asyncio.to_thread(get_harness("mini-swe-agent").ensure_installed)
    npm = await asyncio.to_thread(get_harness("opencode").ensure_installed)
    package = next((venv / "lib").glob("python3*/site-packages/minisweagent"))
    probe = (
        f"{venv}/bin/python -c 'import minisweagent' && echo import-ok; "
        f"touch {venv}/x {npm}/x 2>/dev/null || echo no-new-file; "
        f"echo pwn >> {package}/__init__.py 2>/dev/null || echo no-write-package; "
        f"echo pwn >> {npm}/node_modules/opencode-ai/package.json 2>/dev/null || echo no-write-npm; "
        f"rm -rf {venv}/bin 2>/dev/null; test -x {venv}/bin/python && echo venv-intact"
    )
    raw = await probe_installs(
        sb_base, f"export MSWEA_SILENT_STARTUP=1 MSWEA_GLOBAL_CONFIG_DIR=$HOME/.m; {probe}"
    )
    assert raw.stdout.split() == [
        "import-ok", "no-new-file", "no-write-package", "no-write-npm", "venv-intact"
    ], raw.stdout + raw.stderr  # fmt: skip
    assert "pwn" not in (package / "__init__.py").read_text()
    assert not (venv / "x").exists() and not (npm / "x").exists()
