"""Self-check of a task: its checker must score < 1.0 on the untouched workspace and exactly 1.0
after the task's reference solution ran. `harnessrl tasks check` and the bundled-set tests use this.

The reference script (`reference/solve.sh`) is written outside the workspace and run with
`bash <script>` and the workspace as cwd, through the same `CommandRunner` seam as checkers. Tasks
without a code checker (rubric-only) are not self-checked: judging needs a model.
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
from harnessrl.verify.runner import CommandRunner, LocalRunner


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

    @property
    def ok(self) -> bool:
        """Untouched < 1.0 and, where there is a reference, reference == 1.0 with no error."""
        if self.untouched is None:
            return True
        if self.untouched.error is not None or self.untouched.score >= 1.0:
            return False
        if self.reference is None:
            return self.reference_error is None
        return self.reference_error is None and self.reference.error is None and self.reference.score == 1.0


def _run_reference(ref: TaskFile, ws: Path, tmp: Path, timeout_s: float, runner: CommandRunner) -> str | None:
    script = write_files([ref], tmp / "ref")[0]
    home = tmp / "home"
    home.mkdir()
    out = runner.run(["bash", str(script)], ws, checker_env(home, sys.executable), timeout_s)
    if out.timed_out:
        return f"reference timed out after {timeout_s:g} s"
    if out.returncode != 0:
        return f"reference exited with status {out.returncode}: {out.stderr[-300:].strip()}"
    return None


def self_check(task: Task, timeout_s: float = 120.0, runner: CommandRunner | None = None) -> SelfCheck:
    """Run the checker on the untouched workspace, then on the reference solution's workspace.

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
        untouched = run_checker(task, ws, timeout_s=timeout_s, runner=runner)
        if task.reference is None:
            return SelfCheck(task.id, untouched, None)
        shutil.rmtree(ws)
        materialize_workspace(task, ws)
        error = _run_reference(task.reference, ws, tmp, timeout_s, runner)
        return SelfCheck(task.id, untouched, run_checker(task, ws, timeout_s=timeout_s, runner=runner), error)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
