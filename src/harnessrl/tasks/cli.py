"""`harnessrl tasks list|show|check PATH`: load a task set, print it, self-check its checkers.

`check` exits 1 when any task fails its self-check (untouched workspace scores 1.0, reference below
1.0, or a checker/reference error) or when any task was rejected while loading; 2 when the set
cannot be found. Rubric-only tasks are listed but not checked (judging needs a model). Checkers and
reference scripts run through `LocalRunner`, unsandboxed: only check task sets you trust.
"""

from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from harnessrl.tasks.loader import TaskSetLoad, load_tasks
from harnessrl.types import Task, TaskError
from harnessrl.verify.checker import CheckResult
from harnessrl.verify.selfcheck import SelfCheck, self_check

app = typer.Typer(help="Load, inspect and self-check task sets.", no_args_is_help=True)

PathArg = Annotated[
    str, typer.Argument(help="`bundled`, a ClawGym folder, a .jsonl file or PinchBench .md tasks.")
]
SplitOpt = Annotated[str | None, typer.Option("--split", help="Only tasks of this split.")]


def _console() -> Console:
    return Console() if sys.stdout.isatty() else Console(width=200, soft_wrap=True)


def _load(console: Console, path: str, split: str | None) -> TaskSetLoad:
    try:
        return load_tasks(path, split=split)
    except TaskError as e:
        console.print(f"[red]error:[/red] {e}", markup=True, highlight=False)
        raise typer.Exit(2) from None


def _print_rejected(console: Console, load: TaskSetLoad) -> None:
    for err in load.rejected:
        console.print(f"rejected: {err}", markup=False, highlight=False)
    console.print(f"{len(load.tasks)} task(s) loaded, {len(load.rejected)} rejected", highlight=False)


def _task_table(tasks: list[Task]) -> Table:
    table = Table("id", "split", "category", "grading", "#files", "checker", "reference")
    for t in tasks:
        table.add_row(
            t.id,
            t.split,
            t.category,
            t.grading_type,
            str(len(t.workspace)),
            t.checker.entry if t.checker else "-",
            "yes" if t.reference else "-",
        )
    return table


@app.command("list")
def list_tasks(path: PathArg, split: SplitOpt = None) -> None:
    """Print the tasks of a task set and the rejected ones (with file and line)."""
    console = _console()
    load = _load(console, path, split)
    console.print(_task_table(load.tasks))
    _print_rejected(console, load)


@app.command()
def show(path: PathArg, task_id: str, split: SplitOpt = None) -> None:
    """Print one task: prompt, workspace files, checker files and rubric (checker code is not shown)."""
    console = _console()
    load = _load(console, path, split)
    task = next((t for t in load.tasks if t.id == task_id), None)
    if task is None:
        console.print(f"no task {task_id!r} in {path}", markup=False)
        raise typer.Exit(1)
    console.print(f"id: {task.id}\nsplit: {task.split}\ncategory: {task.category}", markup=False)
    console.print(f"grading: {task.grading_type}\nsource: {task.source}", markup=False, highlight=False)
    console.print(f"prompt:\n{task.prompt}\n", markup=False, highlight=False)
    console.print("workspace files:", *(f"  {f.path}" for f in task.workspace), sep="\n", markup=False)
    if task.checker:
        files = (f"  {f.path}" for f in task.checker.files)
        console.print(f"checker (entry {task.checker.entry}):", *files, sep="\n", markup=False)
    for rule in task.rubric:
        console.print(f"rubric {rule.name} [{rule.file_path or '-'}]: {rule.description}", markup=False)
    console.print(f"reference: {task.reference.path if task.reference else '-'}", markup=False)


def _fmt(result: CheckResult | None) -> str:
    if result is None:
        return "-"
    return f"{result.score:.3f}" + (f" ({result.error})" if result.error else "")


def _run_checks(console: Console, tasks: list[Task], timeout: float, jobs: int) -> list[SelfCheck]:
    """Self-check every task, `jobs` at a time (threads: the work happens in subprocesses)."""
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as progress:
        bar = progress.add_task("checking tasks", total=len(tasks))
        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            futures = [pool.submit(self_check, task, timeout) for task in tasks]
            for future in as_completed(futures):
                future.result()
                progress.advance(bar)
        return [f.result() for f in futures]


@app.command()
def check(
    path: PathArg,
    split: SplitOpt = None,
    timeout: Annotated[float, typer.Option("--timeout", help="Seconds per checker / reference run.")] = 120.0,
    jobs: Annotated[int, typer.Option("--jobs", "-j", help="Tasks checked at once.")] = 1,
) -> None:
    """Run each checker on the untouched workspace and on the reference solution's workspace."""
    console = _console()
    load = _load(console, path, split)
    results = _run_checks(console, load.tasks, timeout, jobs)
    table = Table("id", "untouched", "reference", "result")
    for r in results:
        verdict = "ok" if r.ok else "FAIL"
        if r.untouched is None:
            verdict = "not checked (no code checker)"
        elif r.reference_error:
            verdict += f": {r.reference_error}"
        table.add_row(r.task_id, _fmt(r.untouched), _fmt(r.reference), verdict)
    console.print(table)
    _print_rejected(console, load)
    failed = [r.task_id for r in results if not r.ok]
    console.print(f"{len(results) - len(failed)} ok, {len(failed)} failed", highlight=False)
    if failed or load.rejected:
        raise typer.Exit(1)
