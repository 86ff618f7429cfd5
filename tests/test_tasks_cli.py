"""`harnessrl tasks list|show|check` through typer's CliRunner on small task sets built here.

`check` runs every checker and reference script in a real bubblewrap sandbox unless `--local`."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harnessrl.cli import app

CHECK = """
from pathlib import Path

def grade(transcript, workspace_path):
    out = Path(workspace_path) / "out.txt"
    return {"exists": float(out.exists()), "content": float(out.exists() and out.read_text() == "done\\n")}
"""
ALWAYS_ONE = "def grade(t, w):\n    return {'free': 1.0}\n"


def make_task(
    split: Path, name: str, check: str = CHECK, solve: str | None = "echo done > out.txt\n"
) -> Path:
    d = split / name
    (d / "input_files").mkdir(parents=True)
    (d / "reward").mkdir()
    entry = {"task_id": name, "user_query": f"prompt of {name}", "metadata": {"category": "edit"}}
    (d / "data_entry.json").write_text(json.dumps(entry))
    (d / "input_files" / "in.txt").write_text("in\n")
    (d / "reward" / "check.py").write_text(check)
    if solve is not None:
        (d / "reference").mkdir()
        (d / "reference" / "solve.sh").write_text(solve)
    return d


@pytest.fixture
def task_set(tmp_path: Path) -> Path:
    root = tmp_path / "set"
    make_task(root / "train", "task_good")
    make_task(root / "train", "task_free", check=ALWAYS_ONE)
    make_task(root / "train", "task_badref", solve="echo partial > other.txt\nexit 3\n")
    make_task(root / "test", "task_noref", solve=None)
    return root


def row(out: str, *cells: str) -> bool:
    return re.search(r"\s*│\s*".join(re.escape(c) for c in cells), out) is not None


def test_check_passing_split(task_set: Path) -> None:
    res = CliRunner().invoke(app, ["tasks", "check", str(task_set / "test")])
    assert res.exit_code == 0, res.output
    assert row(res.output, "task_noref", "0.000", "-", "-", "ok")
    assert "1 task(s) loaded, 0 rejected" in res.output
    assert res.output.splitlines()[-1] == "1 ok, 0 failed (sandboxed)"
    assert "UNSANDBOXED" not in res.output


def test_check_reports_failures(task_set: Path) -> None:
    res = CliRunner().invoke(
        app, ["tasks", "check", str(task_set), "--split", "train", "--timeout", "20", "-j", "2"]
    )
    assert res.exit_code == 1, res.output
    assert row(res.output, "task_good", "0.000", "1.000", "-", "ok")
    assert row(res.output, "task_free", "1.000", "1.000", "-", "FAIL")
    assert row(res.output, "task_badref", "0.000", "0.000", "-", "FAIL: reference exited with status 3")
    assert "1 ok, 2 failed (sandboxed)" in res.output


def test_check_reference_timeout(tmp_path: Path) -> None:
    make_task(tmp_path / "s", "task_slow", solve="sleep 30\n")
    res = CliRunner().invoke(app, ["tasks", "check", str(tmp_path / "s"), "--timeout", "2"])
    assert res.exit_code == 1
    assert row(res.output, "task_slow", "0.000", "0.000", "-", "FAIL: reference timed out after 2 s")


def test_list_shows_tasks_and_rejects(task_set: Path) -> None:
    (make_task(task_set / "train", "task_broken") / "data_entry.json").unlink()
    res = CliRunner().invoke(app, ["tasks", "list", str(task_set)])
    assert res.exit_code == 1, res.output  # what loaded is printed, and the rejects fail the command
    assert row(res.output, "task_good", "train", "edit", "automated", "1", "reward/check.py", "yes")
    assert row(res.output, "task_noref", "test", "edit", "automated", "1", "reward/check.py", "-")
    broken = task_set / "train" / "task_broken" / "data_entry.json"
    assert f"rejected: {broken}: missing data_entry.json" in res.output
    assert "4 task(s) loaded, 1 rejected" in res.output
    res = CliRunner().invoke(app, ["tasks", "check", str(task_set / "test")])
    assert res.exit_code == 0
    res = CliRunner().invoke(app, ["tasks", "check", str(task_set), "--split", "test"])
    assert res.exit_code == 1  # a rejected task fails `check`


def test_jsonl_rejects_print_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "syn_task.jsonl"
    good = {"prompt": "p", "input_files": [{"file_path": "a.txt", "content": "a"}], "rules": ["be nice"]}
    path.write_text(json.dumps(good) + "\nnot json\n" + json.dumps({"hook_code": "x"}) + "\n")
    res = CliRunner().invoke(app, ["tasks", "list", str(path)])
    assert res.exit_code == 1
    assert row(res.output, "syn_task.jsonl:1", tmp_path.name, "", "llm_judge", "1", "-", "-")
    assert f"rejected: {path}:2: not valid JSON" in res.output
    assert f"rejected: {path}:3: missing `prompt`" in res.output
    assert "1 task(s) loaded, 2 rejected" in res.output


def test_show_hides_checker_code(task_set: Path) -> None:
    res = CliRunner().invoke(app, ["tasks", "show", str(task_set), "task_good"])
    assert res.exit_code == 0, res.output
    assert "prompt:\nprompt of task_good\n" in res.output
    assert "workspace files:\n  in.txt\n" in res.output
    assert "checker (entry reward/check.py):\n  reward/check.py\n" in res.output
    assert "reference: reference/solve.sh" in res.output
    assert "def grade" not in res.output
    res = CliRunner().invoke(app, ["tasks", "show", str(task_set), "task_nope"])
    assert res.exit_code == 1


def test_missing_set_exits_2(tmp_path: Path) -> None:
    res = CliRunner().invoke(app, ["tasks", "list", str(tmp_path / "nope")])
    assert res.exit_code == 2
    assert "task set not found" in res.output


def test_vanished_source_fails_check_without_crashing(task_set: Path) -> None:
    from harnessrl.tasks import load_tasks
    from harnessrl.verify.selfcheck import self_check

    [task] = load_tasks(task_set / "test").tasks
    (task_set / "test" / "task_noref" / "input_files" / "in.txt").unlink()
    result = self_check(task, timeout_s=20)
    assert not result.ok
    assert result.untouched is not None
    assert result.untouched.error is not None and result.untouched.error.startswith("cannot run: ")


@pytest.mark.slow
def test_check_bundled_set() -> None:
    """The issue's acceptance check: every bundled task < 1.0 untouched and exactly 1.0 solved."""
    res = CliRunner().invoke(app, ["tasks", "check", "bundled", "-j", "2"])
    assert res.exit_code == 0, res.output
    assert " 0 failed" in res.output and ", 0 rejected" in res.output


def test_list_exits_0_without_rejects(task_set: Path) -> None:
    res = CliRunner().invoke(app, ["tasks", "list", str(task_set)])
    assert res.exit_code == 0, res.output
    assert res.output.splitlines()[-1] == "4 task(s) loaded, 0 rejected"


def test_check_is_sandboxed_unless_local(tmp_path: Path) -> None:
    """The reference writes where it should not: a sandbox refuses it; --local runs it and says so."""
    outside = tmp_path / "outside"
    outside.mkdir()
    probe = f"echo done > out.txt\necho escaped > {outside}/probe || true\n"
    make_task(tmp_path / "s", "task_probe", solve=probe)
    res = CliRunner().invoke(app, ["tasks", "check", str(tmp_path / "s")])
    assert res.exit_code == 0, res.output
    assert row(res.output, "task_probe", "0.000", "1.000", "-", "ok")
    assert not (outside / "probe").exists()
    res = CliRunner().invoke(app, ["tasks", "check", str(tmp_path / "s"), "--local"])
    assert res.exit_code == 0, res.output
    warning = (
        "WARNING: --local: checkers and reference scripts run UNSANDBOXED on this machine, with your "
        "files and network; only check task sets you trust"
    )
    lines = res.output.splitlines()
    assert (lines[0], lines[-2], lines[-1]) == (warning, "1 ok, 0 failed (unsandboxed (--local))", warning)
    assert (outside / "probe").read_text() == "escaped\n"


def test_check_runs_the_wrong_solution(tmp_path: Path) -> None:
    good = make_task(tmp_path / "s", "task_caught")
    (good / "reference" / "wrong.sh").write_text("echo Done > out.txt\n")
    lax = make_task(
        tmp_path / "s", "task_lax", check=CHECK.replace("read_text() ==", "read_text().lower() ==")
    )
    (lax / "reference" / "wrong.sh").write_text("echo Done > out.txt\n")
    res = CliRunner().invoke(app, ["tasks", "check", str(tmp_path / "s")])
    assert res.exit_code == 1, res.output
    assert row(res.output, "task_caught", "0.000", "1.000", "0.500", "ok")
    assert row(res.output, "task_lax", "0.000", "1.000", "1.000", "FAIL: the wrong solution scores 1.0")


def test_tasks_package_never_imports_verify() -> None:
    """issue 13 §0: tasks/ is task sets; scoring (verify/) imports it, never the other way round."""
    import subprocess
    import sys

    code = (
        "import sys, harnessrl.tasks, harnessrl.commands.tasks, harnessrl.tasks.generate\n"
        "print(sorted(m for m in sys.modules if m.startswith(('harnessrl.verify', 'harnessrl.sandbox'))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout == "[]\n"


LONG = "task_" + "a-long-task-name-that-no-terminal-column-would-fit-" * 3 + "end"


def test_piped_list_shows_whole_names_and_json(tmp_path: Path) -> None:
    """stdout a pipe (a real subprocess): no cell is cut, however long; `--json` is the same rows."""
    import os
    import subprocess
    import sys

    make_task(tmp_path / "set" / "train", LONG)
    make_task(tmp_path / "set" / "train", "task_short", solve=None)
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1] / "src"))
    argv = [
        sys.executable,
        "-c",
        "from harnessrl.cli import app; app()",
        "tasks",
        "list",
        str(tmp_path / "set"),
    ]
    shown = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)
    assert shown.returncode == 0, shown.stderr
    assert row(shown.stdout, LONG, "train", "edit", "automated", "1", "reward/check.py", "yes")
    assert "…" not in shown.stdout
    as_json = subprocess.run([*argv, "--json"], capture_output=True, text=True, env=env, timeout=120)
    assert as_json.returncode == 0 and as_json.stderr == "2 task(s) loaded, 0 rejected\n"
    common = {
        "split": "train",
        "category": "edit",
        "grading": "automated",
        "#files": 1,
        "checker": "reward/check.py",
    }
    assert json.loads(as_json.stdout) == {
        "tasks": [
            {"id": LONG, **common, "reference": True},
            {"id": "task_short", **common, "reference": False},
        ],
        "rejected": [],
    }
