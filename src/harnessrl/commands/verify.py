"""`harnessrl tasks check PATH`: self-check every checker of a task set (it belongs with scoring).

For each task with a code checker: the untouched workspace must score < 1.0, the reference solution
(`reference/solve.sh`) exactly 1.0, and the plausible wrong solution (`reference/wrong.sh`, where the
task has one) < 1.0 (`verify.selfcheck`). Rubric-only tasks are listed, not checked (judging needs a
model).

Checkers and reference scripts are task-set code, so by default each runs in its own fresh bubblewrap
sandbox (`SandboxCommandRunner`: read-only system, no network, only the workspace and the script's
folder writable). `--local` runs them as plain processes on this machine and says so on every run.

Exit status: 0 when every task passed and nothing was rejected while loading; 1 otherwise; 2 when
the set cannot be found. The command is registered into the `tasks` group by `harnessrl.cli`, so
`tasks/` never imports `verify/`.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from harnessrl.commands.tasks import FormatOpt, PathArg, SplitOpt, console, load_or_exit, print_rejected
from harnessrl.types import Task
from harnessrl.verify.checker import CheckResult
from harnessrl.verify.command_runner import CommandRunner, LocalRunner
from harnessrl.verify.selfcheck import SelfCheck, self_check

LOCAL_WARNING = (
    "WARNING: --local: checkers and reference scripts run UNSANDBOXED on this machine, with your "
    "files and network; only check task sets you trust"
)


def make_runner(local: bool) -> CommandRunner:
    """`LocalRunner` for `--local`, else a fresh bubblewrap sandbox per command, with the sandbox
    agent environment when it is built (as rollouts score)."""
    if local:
        return LocalRunner()
    from harnessrl.sandbox.agent_env import resolve_agent_env
    from harnessrl.verify.sandboxed import SandboxCommandRunner

    return SandboxCommandRunner(agent_env=resolve_agent_env("auto"))


def _fmt(result: CheckResult | None) -> str:
    if result is None:
        return "-"
    return f"{result.score:.3f}" + (f" ({result.error})" if result.error else "")


def _verdict(r: SelfCheck) -> str:
    if r.untouched is None:
        return "not checked (no code checker)"
    verdict = "ok" if r.ok else "FAIL"
    problems = [e for e in (r.reference_error, r.wrong_error) if e]
    if r.wrong is not None and r.wrong.error is None and r.wrong.score >= 1.0:
        problems.append("the wrong solution scores 1.0")
    return verdict + (f": {'; '.join(problems)}" if problems else "")


def run_checks(
    out: Console, tasks: list[Task], timeout: float, jobs: int, runner: CommandRunner
) -> list[SelfCheck]:
    """Self-check every task, `jobs` at a time (threads: the work happens in subprocesses)."""
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=out, transient=True) as progress:
        bar = progress.add_task("checking tasks", total=len(tasks))
        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            futures = [pool.submit(self_check, task, timeout, runner) for task in tasks]
            for future in as_completed(futures):
                future.result()
                progress.advance(bar)
        return [f.result() for f in futures]


def check(
    path: PathArg,
    split: SplitOpt = None,
    timeout: Annotated[float, typer.Option("--timeout", help="Seconds per checker / reference run.")] = 120.0,
    jobs: Annotated[int, typer.Option("--jobs", "-j", help="Tasks checked at once.")] = 1,
    local: Annotated[
        bool, typer.Option("--local", help="Run checkers and references UNSANDBOXED (trusted sets only).")
    ] = False,
    fmt: FormatOpt = "auto",
) -> None:
    """Run each checker on the untouched workspace and after the reference (and wrong) solutions."""
    out = console()
    load = load_or_exit(out, path, split, fmt)
    if local:
        out.print(LOCAL_WARNING, markup=False, highlight=False)
    mode = "unsandboxed (--local)" if local else "sandboxed"
    out.print(
        f"checking {len(load.tasks)} task(s), {max(1, jobs)} at once ({mode})", markup=False, highlight=False
    )
    results = run_checks(out, load.tasks, timeout, jobs, make_runner(local))
    table = Table("id", "untouched", "reference", "wrong", "result")
    for r in results:
        table.add_row(r.task_id, _fmt(r.untouched), _fmt(r.reference), _fmt(r.wrong), _verdict(r))
    out.print(table)
    print_rejected(out, load)
    failed = [r.task_id for r in results if not r.ok]
    out.print(f"{len(results) - len(failed)} ok, {len(failed)} failed ({mode})", highlight=False)
    if local:
        out.print(LOCAL_WARNING, markup=False, highlight=False)
    if failed or load.rejected:
        raise typer.Exit(1)
