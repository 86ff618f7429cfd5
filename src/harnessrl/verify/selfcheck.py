"""Self-check of a task: its checker must score < 1.0 on the untouched workspace, exactly 1.0 after
the task's reference solution ran, and (where the task has one) < 1.0 after its plausible wrong
solution ran. `harnessrl tasks check`, the bundled-set and the generated-set tests use this.

The reference script (`reference/solve.sh`) and the wrong one (`reference/wrong.sh`, a complete wrong
solution, run on a fresh copy of the initial workspace) are written outside the workspace and run
with `bash <script>` and the workspace as cwd, through the same `CommandRunner` seam as checkers
(`LocalRunner` unless told otherwise; `tasks check` passes a sandboxed one). Tasks without a code
checker (rubric-only) are not self-checked: judging needs a model.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from harnessrl.tasks.files import materialize_workspace, write_files
from harnessrl.types import Task, TaskError, TaskFile, VerifierError
from harnessrl.verify.checker import CheckResult, checker_env, run_checker
from harnessrl.verify.command_runner import CommandRunner, LocalRunner
from harnessrl.verify.harbor_reference import run_harbor_reference


@dataclass
class SelfCheck:
    """Outcome of one task's self-check."""

    task_id: str
    untouched: CheckResult | None
    """Checker on the initial workspace (None: the task has no code checker)."""
    reference: CheckResult | None
    """Checker after the reference solution (None: no checker or no reference)."""
    reference_error: str | None = None
    """Why the reference script failed (non-zero exit, timeout); the checker still ran."""
    wrong: CheckResult | None = None
    """Checker after the wrong solution (None: no checker or no `reference/wrong.sh`)."""
    wrong_error: str | None = None
    """Why the wrong solution's script failed; the checker still ran."""

    @property
    def ok(self) -> bool:
        """Untouched < 1.0; reference == 1.0 with no error; wrong (if any) < 1.0 with no error."""
        if self.untouched is None:
            return True
        if self.untouched.error is not None or self.untouched.score >= 1.0:
            return False
        if self.reference_error is not None or self.wrong_error is not None:
            return False
        if self.reference is not None and (self.reference.error is not None or self.reference.score != 1.0):
            return False
        return self.wrong is None or (self.wrong.error is None and self.wrong.score < 1.0)

    @property
    def wrong_lost(self) -> list[str]:
        """The metrics the wrong solution scored below the reference (what it was caught on)."""
        if self.wrong is None or self.reference is None:
            return []
        ref = self.reference.metrics
        return [k for k, v in ref.items() if self.wrong.metrics.get(k, 0.0) < v]


def _run_script(
    name: str, ref: TaskFile, ws: Path, tmp: Path, timeout_s: float, runner: CommandRunner
) -> str | None:
    script = write_files([ref], tmp / name)[0]
    home = tmp / f"{name}-home"
    home.mkdir()
    out = runner.run(["bash", str(script)], ws, checker_env(home, sys.executable), timeout_s)
    label = "reference" if name == "reference" else "wrong solution"
    if out.timed_out:
        return f"{label} timed out after {timeout_s:g} s"
    if out.returncode != 0:
        return f"{label} exited with status {out.returncode}: {out.stderr[-300:].strip()}"
    return None


def _solved(
    task: Task, script: TaskFile, name: str, tmp: Path, timeout_s: float, runner: CommandRunner
) -> tuple[CheckResult, str | None]:
    """Fresh initial workspace -> run `script` in it -> the checker's result and the script's error."""
    ws = tmp / "workspace"
    shutil.rmtree(ws, ignore_errors=True)
    materialize_workspace(task, ws)
    if task.checker is not None and task.checker.kind == "harbor":
        error = run_harbor_reference(task, ws, script, runner, timeout_s)
    else:
        error = _run_script(name, script, ws, tmp, timeout_s, runner)
    return run_checker(task, ws, timeout_s=timeout_s, runner=runner), error


def self_check(task: Task, timeout_s: float = 120.0, runner: CommandRunner | None = None) -> SelfCheck:
    """Run the checker on the untouched workspace, then after the reference and the wrong solution.

    A task whose files cannot be written (a source vanished, a path is refused) fails the self-check
    with the reason as the untouched result's error; nothing is raised.
    """
    if task.checker is None:
        return SelfCheck(task.id, None, None)
    try:
        return _self_check(task, timeout_s, runner or LocalRunner())
    except (TaskError, VerifierError, OSError) as e:
        return SelfCheck(task.id, CheckResult(score=0.0, error=f"cannot run: {e}"), None)


def _self_check(task: Task, timeout_s: float, runner: CommandRunner) -> SelfCheck:
    tmp = Path(tempfile.mkdtemp(prefix="harnessrl-selfcheck-"))
    try:
        ws = tmp / "workspace"
        materialize_workspace(task, ws)
        result = SelfCheck(task.id, run_checker(task, ws, timeout_s=timeout_s, runner=runner), None)
        if task.reference is not None:
            result.reference, result.reference_error = _solved(
                task, task.reference, "reference", tmp, timeout_s, runner
            )
        if task.wrong_reference is not None:
            result.wrong, result.wrong_error = _solved(
                task, task.wrong_reference, "wrong", tmp, timeout_s, runner
            )
        return result
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
