"""Code checkers with ClawGym semantics: `run_checker(task, workspace) -> CheckResult`.

The checker files are written into a fresh temporary folder that is never inside the workspace (the
agent has finished by then, and never saw them), and `_driver.py` runs the entry in a separate python
process through a `CommandRunner` (own process group, killed whole on timeout; the sandboxed runner
mounts the folder read-only and a bounded copy of the workspace at the task's own mount dir, as
upstream does). The driver reports through a channel the runner opened before any checker code ran,
and seals it (see `_driver.py`); a report counts only when sealed and with exit status 0 (exit
status `TAMPERED`: another process wrote to the channel). The workspace path is passed to the
checker as argv[1]: `reward.sh` hard-codes `/root/.openclaw/workspace`, so the hook command itself
is never run.

Score = equal-weight mean of the metric values (a score outside `verify.reward_range`, [0, 1] unless
set, is refused and scores 0 in `hybrid.score_task`). Each
metric value goes through `float(v)`, as the canonical `reward.sh` wrapper does
(`tasks.reward_sh.wrapper_score`): numeric strings (`"1.0"`, `" 0 "`, `"1e0"`) and booleans count as
their float value, so a checker scores here what it scored upstream. A checker that raises, exits
non-zero, hangs past its timeout, prints no JSON, or returns a non-dict, an empty dict or a value
`float()` refuses (or a non-finite one) scores 0.0 with the reason in `error`. A bare number printed
by a `main()` checker counts as one metric `score` (as `reward.sh` accepts it). Reading the answer
never raises, whatever the bytes (deep nesting, huge ints, a 400-digit score): the checker ran on the
agent's workspace, so an answer that cannot be read is its failure, scored 0.0 with the reason.

A task whose `reward.sh` is not the canonical wrapper (`Checker.shell_entry`) is scored by running
that script with bash, as upstream runs it: its reward folder is first copied into the final
workspace (upstream copies `reward/` next to the workspace files after the agent finished; an entry
of the agent's own with that name is removed first) and removed again afterwards, and the script's
output is read like a `main()` checker's: all of stdout as JSON, else its last non-empty line (a
number or a JSON dict), of what arrived before bash exited (`_driver.py`). Programs the script runs
from the workspace share its stdout while it runs, so training refuses such tasks by default
(`refuse_shell_entries`, `VerifyConfig.allow_shell_entries`). Its hard-coded paths
(`/root/.openclaw/workspace/...`) hold only in the checker sandbox, which mounts the workspace at the
task's mount dir; `LocalRunner` cannot run it.
"""

from __future__ import annotations

import json
import math
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harnessrl.formats import untrusted_json
from harnessrl.sandbox.fscopy import remove_tree
from harnessrl.tasks.files import materialize_checker
from harnessrl.types import Task, VerifierError, refuse_unless
from harnessrl.verify.command_runner import (
    DRIVER,
    TAMPERED,
    CheckerJob,
    CommandRunner,
    LocalRunner,
    RunOutput,
    checker_env,
)
from harnessrl.verify.harbor import run_harbor_verifier
from harnessrl.verify.harbor_roots import VerifierRoot
from harnessrl.verify.result import CheckResult

__all__ = [
    "CheckResult",
    "checker_env",
    "metrics_from_value",
    "parse_stdout",
    "refuse_shell_entries",
    "run_checker",
]
TAIL_CHARS = 2000


def metrics_from_value(value: Any) -> tuple[dict[str, float], str | None]:
    """Validate a checker's return value -> (metrics, None) or ({}, reason)."""
    if isinstance(value, bool) or not isinstance(value, (dict, int, float)):
        return {}, f"checker returned {type(value).__name__}, not a dict of numbers"
    if not isinstance(value, dict):
        value = {"score": value}
    if not value:
        return {}, "checker returned an empty dict"
    metrics: dict[str, float] = {}
    for key, v in value.items():
        try:
            number = float(v)  # the canonical wrapper's arithmetic: "1.0" and True count
        except (TypeError, ValueError, OverflowError):  # OverflowError: a 400-digit int
            number = math.nan
        if not math.isfinite(number):
            return {}, f"metric {key!r} is not a finite number: {v!r}"
        if not untrusted_json.is_text(str(key)):  # a lone surrogate: no record holding it could be written
            return {}, f"metric name {key!r} is not Unicode text"
        metrics[str(key)] = number
    return metrics, None


def parse_stdout(stdout: str) -> tuple[Any, str | None]:
    """The JSON a `main()` checker printed: all of stdout, else its last non-empty line. Never raises:
    JSON that the one untrusted-JSON decoder refuses (deeper than 256, an integer over 4,300 digits)
    is output that is not JSON."""
    text = stdout.strip()
    if not text:
        return None, "checker printed nothing"
    lines = [line for line in text.splitlines() if line.strip()]
    for candidate in (text, lines[-1]):
        try:
            return untrusted_json.loads(candidate, "checker output", keep_surrogates=True), None
        except untrusted_json.UntrustedJSONError:  # not JSON, deeper than 256, an integer too long
            continue
    return None, f"checker output is not JSON: {text[-200:]!r}"


_UNREADABLE = object()


def _parse_report(raw: bytes | None) -> Any:
    """The driver's report as JSON; None when there is none (or the channel was not sealed),
    `_UNREADABLE` when it is not JSON. Never raises."""
    try:
        return untrusted_json.loads(raw, "checker report", keep_surrogates=True) if raw else None
    except untrusted_json.UntrustedJSONError:  # not JSON, deeper than 256, an integer too long
        return _UNREADABLE


def _interpret(out: RunOutput, result: Any, timeout_s: float) -> tuple[Any, str, str | None]:
    """-> (value, mode, error) from the process outcome and the driver's report (`_parse_report`). The
    report counts only when the process itself exited 0 (a checker-run program that kills the
    driver, or forges a report and exits, gains nothing)."""
    if out.timed_out:
        return None, "", f"checker timed out after {timeout_s:g} s"
    own_exit = isinstance(result, dict) and result.get("exit_status") == TAMPERED  # its own sys.exit(86)
    if out.returncode == TAMPERED and not own_exit:
        return None, "", "checker report channel was tampered with (a program the checker ran wrote to it)"
    if result is None and out.returncode == 0:
        return None, "", "checker exited 0 without a sealed report"
    if result is _UNREADABLE:
        return None, "", "checker driver sent an unreadable report"
    if not isinstance(result, dict):
        return None, "", f"checker process died (exit status {out.returncode}): {out.stderr[-300:].strip()}"
    mode = str(result.get("mode", ""))
    if result.get("error"):
        last = (str(result["error"]).strip().splitlines() or ["?"])[-1]
        return None, mode, f"checker raised: {last}"
    if "exit_status" in result:
        return None, mode, f"checker exited with status {result['exit_status']}"
    if out.returncode != 0:
        return None, mode, f"checker process exited with status {out.returncode}"
    if mode == "grade":
        return result.get("value"), mode, None
    value, err = parse_stdout(str(result.get("stdout", "")))
    return value, mode, err


def _confined(report: Any) -> bool | None:
    """The driver's `children_confined`, where it reported one."""
    value = report.get("children_confined") if isinstance(report, dict) else None
    return value if isinstance(value, bool) else None


def refuse_shell_entries(tasks: Sequence[Task], allow: bool) -> None:
    """TaskError naming the tasks scored by their own `reward.sh` (`Checker.shell_entry`) unless
    `allow`: training refuses them by default (`VerifyConfig.allow_shell_entries`), since programs
    the script runs from the workspace share its stdout while it runs (docs/SECURITY.md)."""
    ids = [t.id for t in tasks if t.checker is not None and t.checker.shell_entry]
    refuse_unless(
        allow,
        ids,
        "are scored by their own reward.sh, whose answer code from the workspace can forge while it runs",
        "Training refuses them by default",
        "verify.allow_shell_entries",
        "to train on them",
    )


def _top_names(task: Task) -> list[str]:
    assert task.checker is not None
    return sorted({Path(f.path).parts[0] for f in task.checker.files})


def _remove_entries(ws: Path, names: list[str]) -> None:
    """Remove `ws/<name>` without following links (the agent may have planted one there)."""
    for name in names:
        path = ws / name
        if path.is_symlink() or (path.exists() and not path.is_dir()):
            path.unlink()
        elif path.is_dir():
            remove_tree(path)  # agent code the checker ran may have filled it, any depth


def _place_reward(task: Task, ws: Path) -> list[str]:
    """Copy the checker files into the final workspace, as upstream does before running `reward.sh`
    (the agent is gone by now). Returns the top-level names to remove afterwards."""
    names = _top_names(task)
    _remove_entries(ws, names)
    materialize_checker(task, ws)
    return names


def run_checker(
    task: Task,
    workspace: Path,
    transcript: list[Any] | None = None,
    timeout_s: float | None = None,
    runner: CommandRunner | None = None,
    python: str | None = None,
    *,
    root: VerifierRoot | None = None,
    allow_network: bool = False,
) -> CheckResult:
    """Score `workspace` with the task's code checker. Failures are data (score 0.0 + error), never raised.

    A Harbor task's tests (`Checker.kind == "harbor"`) go to `verify.harbor.run_harbor_verifier`, with
    `root` (the system its sandbox runs on; None: the task's own, its image resolved) and
    `allow_network` (its verifier may have the network when the task says it needs it); on an image,
    `workspace` is a copy of the agent's writable layer.

    Raises VerifierError only when the checker never ran: caller mistakes (the task has no checker,
    the workspace is missing) and a checker sandbox that could not be created; TaskError when the
    checker files cannot be written (a source file vanished after loading). Every error of a checker
    that ran is data: it ran on the agent's workspace, which may have made it fail.
    `python` is the interpreter for the checker (default: the one running harnessrl).
    """
    if task.checker is None:
        raise VerifierError(f"task {task.id!r} has no code checker")
    if task.checker.kind == "harbor":
        return run_harbor_verifier(task, workspace, timeout_s, runner, root=root, allow_network=allow_network)
    ws = workspace.resolve()
    if not ws.is_dir():
        raise VerifierError(f"workspace {workspace} is not a directory")
    limit = timeout_s if timeout_s is not None else task.checker.timeout_s
    started = time.monotonic()
    out, raw = _run_staged(task, ws, limit, transcript, runner or LocalRunner(), python or sys.executable)
    return _answer(out, raw, limit, started)


def _run_staged(
    task: Task, ws: Path, limit: float, transcript: list[Any] | None, runner: CommandRunner, python: str
) -> tuple[RunOutput, bytes | None]:
    """Run the checker on `ws` from a folder of its own (its files, the driver, the transcript), with
    the reward files placed in the workspace for a `reward.sh`; both are removed afterwards.
    (process outcome, its raw report)."""
    assert task.checker is not None
    placed: list[str] = []
    tmp = Path(tempfile.mkdtemp(prefix="harnessrl-check-")).resolve()
    try:
        if tmp.is_relative_to(ws):
            raise VerifierError(f"checker folder {tmp} would be inside the workspace")
        materialize_checker(task, tmp / "task")
        shutil.copyfile(DRIVER, tmp / "driver.py")
        (tmp / "transcript.json").write_text(json.dumps(transcript or [], default=repr), encoding="utf-8")
        for path in (tmp, *tmp.rglob("*")):  # readable by the checker's uid, writable by none
            path.chmod(0o755 if path.is_dir() else 0o644)
        entry = task.checker.shell_entry or task.checker.entry
        if task.checker.shell_entry:
            placed = _place_reward(task, ws)
        return runner.run_checker(CheckerJob(tmp, entry, ws, task.input_mount_dir, python, limit))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        if task.checker.shell_entry:
            _remove_entries(ws, placed)


def _answer(out: RunOutput, raw: bytes | None, limit: float, started: float) -> CheckResult:
    """The checker's answer read: the checker ran on the agent's workspace, so whatever its answer
    does here is the policy's (a score of 0 and the error), never an exception."""
    report: Any = None
    metrics: dict[str, float] = {}
    try:
        report = _parse_report(raw)
        value, mode, error = _interpret(out, report, limit)
        if error is None:
            metrics, error = metrics_from_value(value)
    except Exception as e:  # a parser bug must not turn into an infrastructure fault
        mode, error = "", f"checker answer unreadable: {type(e).__name__}"
    return CheckResult(
        score=sum(metrics.values()) / len(metrics) if metrics and error is None else 0.0,
        metrics=metrics if error is None else {},
        error=error,
        mode=mode,
        stdout_tail=out.stdout[-TAIL_CHARS:],
        stderr_tail=out.stderr[-TAIL_CHARS:],
        duration_s=time.monotonic() - started,
        timed_out=out.timed_out,
        children_confined=_confined(report),
    )
