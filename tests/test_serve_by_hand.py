"""The real Gemini CLI and Claude Code, run by hand with the script `harnessrl serve --print-config`
prints, against a real `harnessrl serve` (scripted engine): each runs the scripted shell command in the
folder it was started in, answers "done", and its calls are captured with the dialect it speaks."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest
from test_proxy_cli import Serve
from typer.testing import CliRunner

from harnessrl.cli import app
from harnessrl.harnesses import get_harness
from harnessrl.sandbox import ExecResult

pytestmark = pytest.mark.harness


@pytest.mark.parametrize(("name", "dialect"), [("gemini-cli", "gemini"), ("claude-code", "anthropic")])
def test_a_cli_run_by_hand_against_serve(name: str, dialect: str, tmp_path: Path) -> None:
    harness = get_harness(name)
    harness.ensure_installed()
    assert harness.shell_tool is not None
    turns = [harness.shell_tool.turn("echo hi > hello.txt").model_dump(), "done"]
    serve = Serve(tmp_path, turns=turns)
    try:
        port = serve.url().rsplit(":", 1)[1]
        work = tmp_path / "work"
        work.mkdir()
        old = Path.cwd()
        os.chdir(work)
        try:
            args = ["serve", "--print-config", name, "--port", port, "--home", str(tmp_path / "home")]
            printed = CliRunner().invoke(app, args)
        finally:
            os.chdir(old)
        assert printed.exit_code == 0, printed.output
        env = {"PATH": os.environ["PATH"], "LANG": "C.UTF-8"}
        res = subprocess.run(
            ["bash", "-c", printed.stdout, "script", "write hi to hello.txt"],
            env=env,
            capture_output=True,
            text=True,
            timeout=240,
        )
        assert res.returncode == 0, res.stderr[-2000:]
        assert "Error" not in res.stderr  # no stack trace (Gemini's router without --model logged a 400)
        parsed = harness.parse(ExecResult(res.returncode, res.stdout, res.stderr, False, 1.0))
        assert (parsed.ok, parsed.final_message) == (True, "done")
        assert (work / "hello.txt").read_text() == "hi\n"
    finally:
        assert serve.stop(signal.SIGTERM) == 0
    calls = serve.recorded()
    assert [c.dialect for c in calls] == [dialect, dialect]
    assert [c.text for c in calls] == ["", "done"]
    assert calls[1].render == "spliced"
