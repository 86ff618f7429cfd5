"""Code checkers: ClawGym semantics and every failure mode, run as real subprocesses."""

from __future__ import annotations

import fcntl
import importlib.util
import json
import os
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest
from support import workspace

from harnessrl.tasks import load_tasks, materialize_workspace
from harnessrl.types import Checker, Task, TaskFile, VerifierError
from harnessrl.verify import LocalRunner, RunOutput, run_checker
from harnessrl.verify.checker import parse_stdout
from harnessrl.verify.command_runner import CheckerJob, driver_argv


def task_with(code: str, entry: str = "reward/check.py", extra: list[TaskFile] | None = None) -> Task:
    files = [TaskFile(path=entry, content=code), *(extra or [])]
    return Task(id="t", prompt="p", checker=Checker(files=files, entry=entry))


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    return workspace(tmp_path / "workspace", {"answer.txt": "42\n"})


GRADE = """
import os
from pathlib import Path

def grade(transcript, workspace_path):
    print("noise on stdout is ignored in grade mode")
    ok = (Path(workspace_path) / "answer.txt").read_text().strip() == "42"
    return {"answer": 1.0 if ok else 0.0, "turns": float(len(transcript)), "flag": True, "no": 0}
"""


def test_grade_checker_gets_transcript_and_real_workspace(ws: Path) -> None:
    result = run_checker(task_with(GRADE), ws, transcript=[{"role": "user"}, {"role": "assistant"}])
    assert result.error is None
    assert result.mode == "grade"
    assert result.metrics == {"answer": 1.0, "turns": 2.0, "flag": 1.0, "no": 0.0}
    assert result.score == 1.0
    assert result.stdout_tail == "noise on stdout is ignored in grade mode\n"


MAIN_ONLY = """
import json, sys
from pathlib import Path

def main():
    ws = Path(sys.argv[1])
    print(json.dumps({"exists": float((ws / "answer.txt").exists()), "missing": float((ws / "x").exists())}))

if __name__ == "__main__":
    main()
"""


def test_main_only_checker_parses_stdout(ws: Path) -> None:
    result = run_checker(task_with(MAIN_ONLY, entry="reward/test.py"), ws)
    assert (result.error, result.mode) == (None, "script")
    assert result.metrics == {"exists": 1.0, "missing": 0.0}
    assert result.score == 0.5


def test_main_without_guard_and_sibling_import(ws: Path) -> None:
    code = "import json, sys\nfrom helpers import VALUE\n\ndef main():\n    print(json.dumps({'v': VALUE}))\n"
    task = task_with(code, extra=[TaskFile(path="reward/helpers.py", content="VALUE = 0.25\n")])
    result = run_checker(task, ws)
    assert (result.error, result.mode, result.score) == (None, "main", 0.25)


def test_checker_folder_is_outside_workspace_and_removed(ws: Path) -> None:
    code = "import json, os, sys\nprint(json.dumps({'here': os.getcwd()}))\n"
    result = run_checker(task_with(code), ws)
    assert result.error == "metric 'here' is not a finite number: " + repr(
        json.loads(result.stdout_tail)["here"]
    )
    cwd = Path(json.loads(result.stdout_tail)["here"])
    assert not cwd.is_relative_to(ws.resolve())
    assert not cwd.exists()
    assert sorted(p.name for p in ws.iterdir()) == ["answer.txt"]


@pytest.mark.parametrize(
    ("code", "error"),
    [
        ("def grade(t, w):\n    raise ValueError('boom')\n", "checker raised: ValueError: boom"),
        ("def grade(t, w):\n    return {}\n", "checker returned an empty dict"),
        ("def grade(t, w):\n    return [1.0]\n", "checker returned list, not a dict of numbers"),
        ("def grade(t, w):\n    return None\n", "checker returned NoneType, not a dict of numbers"),
        ("def grade(t, w):\n    return {'a': 1.0, 'b': 'yes'}\n", "metric 'b' is not a finite number: 'yes'"),
        ("def grade(t, w):\n    return {'a': float('nan')}\n", "metric 'a' is not a finite number: nan"),
        ("print('all good, score is high')\n", "checker output is not JSON: 'all good, score is high'"),
        ("pass\n", "checker printed nothing"),
        ("import sys\nprint('{\"a\": 1}')\nsys.exit(3)\n", "checker exited with status 3"),
        ("def grade(t, w)\n    return {}\n", "checker raised: SyntaxError: expected ':'"),
        ("import os\nos._exit(7)\n", "checker process died (exit status 7): "),
    ],
)
def test_failure_modes_score_zero(ws: Path, code: str, error: str) -> None:
    result = run_checker(task_with(code), ws)
    assert (result.score, result.metrics, result.error) == (0.0, {}, error)


def test_bare_number_output_is_one_metric(ws: Path) -> None:
    result = run_checker(task_with("print(0.75)\n"), ws)
    assert (result.error, result.metrics, result.score) == (None, {"score": 0.75}, 0.75)


def _alive(pid: int) -> bool:
    """True while `pid` runs; a killed child of a dead parent may linger as a zombie until reaped."""
    for _ in range(50):
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            return False
        if state in ("Z", "X"):
            return False
        time.sleep(0.1)
    return True


def test_hang_is_killed_with_its_process_group(ws: Path, tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    code = (
        "import subprocess, time\n"
        "def grade(t, w):\n"
        "    child = subprocess.Popen(['sleep', '300'])\n"
        f"    open({str(pid_file)!r}, 'w').write(str(child.pid))\n"
        "    time.sleep(300)\n"
    )
    started = time.monotonic()
    result = run_checker(task_with(code), ws, timeout_s=2.0)
    elapsed = time.monotonic() - started
    assert (result.score, result.timed_out, result.error) == (0.0, True, "checker timed out after 2 s")
    assert 2.0 <= elapsed < 10.0
    assert not _alive(int(pid_file.read_text()))


def test_parse_stdout_prefers_whole_then_last_line() -> None:
    assert parse_stdout('{\n  "a": 1\n}\n') == ({"a": 1}, None)
    assert parse_stdout('progress...\n{"a": 0.5}\n') == ({"a": 0.5}, None)


class RecordingRunner:
    """A real LocalRunner that also records the checker jobs it was asked to run (the sandbox seam)."""

    def __init__(self) -> None:
        self.jobs: list[CheckerJob] = []
        self.inner = LocalRunner()

    def run(self, argv: Sequence[str], cwd: Path, env: Mapping[str, str], timeout_s: float) -> RunOutput:
        return self.inner.run(argv, cwd, env, timeout_s)

    def run_checker(self, job: CheckerJob) -> tuple[RunOutput, bytes | None]:
        self.jobs.append(job)
        return self.inner.run_checker(job)


def test_runner_seam_and_task_timeout(ws: Path) -> None:
    runner = RecordingRunner()
    task = task_with(GRADE)
    assert task.checker is not None
    task.checker.timeout_s = 7.0
    result = run_checker(task, ws, runner=runner)
    assert result.score == 0.5
    [job] = runner.jobs
    assert (job.timeout_s, job.entry, job.workspace) == (7.0, "reward/check.py", ws.resolve())
    assert job.mount_dir == task.input_mount_dir
    assert not job.folder.exists()  # removed after scoring
    argv = driver_argv(job.python, "/c", job.entry, "/w", 3)
    expected = ["-I", "-B", "/c/driver.py", "/c/task/reward/check.py", "/w", "/c/transcript.json", "3"]
    assert argv[1:] == expected


def test_shared_example_untouched_and_solved(shared_fixtures: Path, tmp_path: Path) -> None:
    [task] = load_tasks(shared_fixtures / "clawgym-format" / "example_split").tasks
    ws = tmp_path / "ws"
    materialize_workspace(task, ws)
    untouched = run_checker(task, ws)
    assert (untouched.score, untouched.error) == (0.0, None)
    (ws / "build").mkdir()
    (ws / "build" / "overdue.json").write_text('["Ada", "Linus"]')
    solved = run_checker(task, ws)
    assert solved.metrics == {
        "overdue_file_exists": 1.0,
        "overdue_is_json_list": 1.0,
        "overdue_names_correct": 1.0,
        "overdue_sorted_unique": 1.0,
    }
    assert solved.score == 1.0


def test_caller_mistakes_raise(ws: Path) -> None:
    with pytest.raises(VerifierError, match="has no code checker"):
        run_checker(Task(id="t", prompt="p"), ws)
    with pytest.raises(VerifierError, match="is not a directory"):
        run_checker(task_with(GRADE), ws / "nope")


def _reward_sh_score(task: Task, ws: Path, tmp: Path) -> float:
    """What the task's own reward.sh prints, with its hard-coded mount paths pointed at real folders."""
    from harnessrl.tasks import materialize_checker
    from harnessrl.verify.checker import checker_env

    root = tmp / "reward_sh_root"
    materialize_checker(task, root)
    assert task.checker is not None and task.checker.command is not None
    mount = task.input_mount_dir
    script = task.checker.command.replace(f"{mount}/reward/", f"{root}/reward/").replace(mount, str(ws))
    out = LocalRunner().run(["bash", "-c", script], tmp, checker_env(tmp, sys.executable), 60)
    assert out.returncode == 0, out.stderr
    return float(out.stdout.strip())


def test_score_matches_reward_sh(shared_fixtures: Path, tmp_path: Path) -> None:
    [task] = load_tasks(shared_fixtures / "clawgym-format" / "example_split").tasks
    ws = tmp_path / "ws"
    materialize_workspace(task, ws)
    (ws / "build").mkdir()
    for answer in ('["Linus", "Ada"]', '["Ada", "Linus"]', "{}"):
        (ws / "build" / "overdue.json").write_text(answer)
        ours = run_checker(task, ws)
        assert ours.score == _reward_sh_score(task, ws, tmp_path)
    assert [run_checker(task, ws).score, _reward_sh_score(task, ws, tmp_path)] == [0.25, 0.25]


# A checker that forks at the C level (no Python at-fork hook runs: what code imported into the
# checker's own process could do), so the child keeps the report channel, and forges through it.
C_FORK = """
import ctypes, os, time
FORGED = b'{"mode": "grade", "value": {"x": 1.0}}' + b" " * PAD

def grade(transcript, workspace_path):
    fd = next(n for n in range(3, 64) if "hrl-result" in os.path.realpath(f"/proc/self/fd/{n}"))
    if ctypes.CDLL(None).fork() == 0:
        try:
            if WHEN == "after":
                while os.fstat(fd).st_size == 0:
                    pass
            os.pwrite(fd, FORGED, 0)
            if SEAL:
                import fcntl
                fcntl.fcntl(fd, 1033, 15)
        except OSError:
            pass
        os._exit(0)
    if WHEN != "after":
        time.sleep(1.0)
    return {"x": 0.0}
"""
TAMPERED_ERROR = "checker report channel was tampered with (a program the checker ran wrote to it)"


@pytest.mark.parametrize(
    ("when", "seal", "pad"), [("first", True, 0), ("first", False, 200), ("after", False, 0)]
)
def test_a_process_holding_the_channel_cannot_forge_the_report(
    ws: Path, when: str, seal: bool, pad: int
) -> None:
    """The driver writes its report at offset 0, seals the channel and reads it back; the host takes
    only a sealed channel of a driver that exited 0. A report written first (sealed or longer) makes
    the driver fail; one written after the seal cannot be; a write between the two fails it."""
    code = f"WHEN, SEAL, PAD = {when!r}, {seal!r}, {pad!r}\n" + C_FORK
    result = run_checker(task_with(code), ws)
    assert result.score == 0.0
    if when == "first":
        assert (result.metrics, result.error) == ({}, TAMPERED_ERROR)
    else:  # the child lost the race with the seal (the usual case), or won it and failed the run
        assert (result.metrics, result.error) in (({"x": 0.0}, None), ({}, TAMPERED_ERROR))


def test_an_unsealed_channel_is_no_report() -> None:
    from harnessrl.verify.command_runner import read_report, result_channel

    fd = result_channel()
    try:
        os.write(fd, b'{"mode": "grade", "value": {"x": 1.0}}')
        assert read_report(fd) is None
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_WRITE | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SHRINK)
        assert read_report(fd) is None  # F_SEAL_SEAL missing: more seals could still be added
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SEAL)
        assert read_report(fd) == b'{"mode": "grade", "value": {"x": 1.0}}'
    finally:
        os.close(fd)


def test_the_driver_and_the_host_agree_on_the_tampered_status() -> None:
    from harnessrl.verify import command_runner as runner

    spec = importlib.util.spec_from_file_location("hrl_driver_under_test", runner.DRIVER)
    assert spec is not None and spec.loader is not None
    driver = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(driver)
    assert (driver.TAMPERED, driver.SEALS) == (runner.TAMPERED, runner.SEALS)
