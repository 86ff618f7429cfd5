"""`harnessrl serve --print-config HARNESS`: the script it prints, run by bash, sets up exactly what the
adapter's launch sets up in a rollout (config files under HOME, environment, command line, working
folder), for every CLI harness. The CLI itself is replaced by a recorder (`HARNESSRL_CLI`); the tests
that drive the real CLIs against a real `serve` are in `test_serve_by_hand.py` (`harness` marker)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harnessrl.cli import app
from harnessrl.harnesses import HARNESSES, get_harness
from harnessrl.harnesses.adapter import Endpoint, HarnessContext
from harnessrl.harnesses.by_hand import API_KEY
from harnessrl.sandbox.programs import PROGRAMS_DIR

CLIS = sorted(name for name, h in HARNESSES.items() if h.installer in ("npm", "pypi"))
RECORDER = """#!{python}
import json, os, sys
with open(os.environ["RECORD_TO"], "w") as f:
    json.dump({{"argv": sys.argv[1:], "env": dict(os.environ), "cwd": os.getcwd()}}, f)
"""


def printed(name: str, home: Path, cwd: Path) -> str:
    old = Path.cwd()
    os.chdir(cwd)
    try:
        res = CliRunner().invoke(
            app, ["serve", "--print-config", name, "--port", "8123", "--home", str(home)]
        )
    finally:
        os.chdir(old)
    assert res.exit_code == 0, res.output
    return res.stdout


def test_every_cli_harness_is_covered() -> None:
    """Every registered harness but the system shell is a CLI whose by-hand setup is printed."""
    assert set(CLIS) == set(HARNESSES) - {"shell"} and len(CLIS) >= 20


@pytest.mark.parametrize("name", CLIS)
def test_the_printed_script_sets_up_what_the_adapter_does(name: str, tmp_path: Path) -> None:
    home, work, adapter_home = tmp_path / "home", tmp_path / "work", tmp_path / "adapter-home"
    work.mkdir()
    adapter_home.mkdir()
    script = printed(name, home, work)
    recorder = tmp_path / "recorder"
    recorder.write_text(RECORDER.format(python=sys.executable))
    recorder.chmod(0o755)
    env = {"PATH": "/usr/bin:/bin", "HARNESSRL_CLI": str(recorder), "RECORD_TO": str(tmp_path / "rec.json")}
    res = subprocess.run(
        ["bash", "-c", script, "script", "fix the bug"], env=env, capture_output=True, text=True
    )
    assert res.returncode == 0, res.stderr
    seen = json.loads((tmp_path / "rec.json").read_text())
    # what the adapter does in a rollout with HOME at `home` and the endpoint at serve's address
    harness = get_harness(name)
    ctx = HarnessContext(
        "fix the bug",
        Endpoint("http://127.0.0.1:8123", API_KEY),
        str(work),
        str(home),
        adapter_home,
        harness.install_dir(),
    )
    launch = harness.prepare(ctx)
    wrote = {p.relative_to(adapter_home): p.read_text() for p in adapter_home.rglob("*") if p.is_file()}
    made = {p.relative_to(home): p.read_text() for p in home.rglob("*") if p.is_file()}
    assert made == {rel: text.rstrip("\n") + "\n" for rel, text in wrote.items()}  # the heredoc's newline
    executable = harness.executable(ctx)
    at = launch.argv.index(executable)  # 0, or after `sh -c LAUNCH ...` (mini-swe-agent, code-puppy)
    assert at == (5 if name in ("mini-swe-agent", "code-puppy") else 0)
    assert seen["argv"] == launch.argv[at + 1 :]
    assert "fix the bug" in seen["argv"]
    expected_env = {**launch.env, "HOME": str(home)}
    if "PATH" in expected_env:
        expected_env["PATH"] = expected_env["PATH"].replace(PROGRAMS_DIR, "/usr/bin:/bin")
    assert {k: seen["env"].get(k) for k in expected_env} == expected_env
    assert seen["cwd"] == str(work)


def test_it_refuses_what_is_not_a_cli(tmp_path: Path) -> None:
    for args, said in [
        (["--print-config", "shell"], "error: shell is not a CLI to run by hand"),
        (["--print-config", "whitebox:00000"], "error: whitebox:00000 is not a CLI to run by hand"),
        (["--print-config", "nope"], "error: unknown harness 'nope'"),
    ]:
        res = CliRunner().invoke(app, ["serve", *args])
        assert res.exit_code == 2
        assert res.stderr.startswith(said)
    res = CliRunner().invoke(app, ["serve", "--print-config", "codex", "--port", "0"])
    assert res.exit_code == 2


def test_serve_help_names_gemini_and_print_config() -> None:
    res = CliRunner().invoke(app, ["serve", "--help"], env={"COLUMNS": "200"})
    assert "Gemini" in res.stdout
    assert "--print-config" in res.stdout


def test_adapter_switches_reach_the_launch() -> None:
    args = ["serve", "--print-config", "claude-code", "--port", "8123", "--option", "bare=true"]
    res = CliRunner().invoke(app, [*args, "--option", "max_turns=3"])
    assert res.exit_code == 0, res.output
    assert res.stdout.splitlines()[-1] == (
        '"$CLI" -p "$PROMPT" --output-format stream-json --verbose --dangerously-skip-permissions '
        "--model claude-sonnet-4-5 --bare --max-turns 3"
    )
    for bad, said in [
        ("max_turns=0", "error: harness option max_turns must be a whole number >= 1, got 0"),
        ("a.b=1", "error: --option 'a.b=1' must look like key=value (no dots)"),
    ]:
        res = CliRunner().invoke(app, [*args[:5], "--option", bad])
        assert (res.exit_code, res.stderr.strip()) == (2, said)
