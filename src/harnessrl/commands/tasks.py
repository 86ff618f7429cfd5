"""`harnessrl tasks list|show|generate`: load a task set and print it; write a generated one.

`list` prints every task that loaded, then each rejected one (file:line: what is wrong) and exits 1
when anything was rejected; `list` and `show` exit 2 when the set cannot be found. `generate` writes
procedural tasks (`harnessrl.tasks.generate`). `harnessrl tasks check` (self-check every checker)
runs checkers, so it lives in `harnessrl.commands.verify` and is added to this group
by `harnessrl.cli`: `tasks/` never imports `verify/`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from harnessrl.tasks.config import TaskFormat
from harnessrl.tasks.loader import TaskSetLoad, load_tasks
from harnessrl.types import Task, TaskError

app = typer.Typer(help="Load, inspect, self-check and generate task sets.", no_args_is_help=True)

PathArg = Annotated[
    str,
    typer.Argument(help="`bundled`, a ClawGym folder, a .jsonl file, PinchBench .md tasks or Harbor tasks."),
]
SplitOpt = Annotated[str | None, typer.Option("--split", help="Only tasks of this split.")]
FormatOpt = Annotated[
    str, typer.Option("--format", help="auto (detected), harbor, clawgym, jsonl or pinchbench.")
]
FORMATS: tuple[TaskFormat, ...] = ("auto", "harbor", "clawgym", "jsonl", "pinchbench")


def console(*, stderr: bool = False) -> Console:
    """`progress.console`: the terminal's, or one that never cuts a table cell when piped."""
    from harnessrl.progress import console as make_console

    return make_console(stderr=stderr)


def load_or_exit(out: Console, path: str, split: str | None, fmt: str = "auto") -> TaskSetLoad:
    """`load_tasks`, or print the error and exit 2 when the set itself cannot be found (or holds no
    task of any format looked for, or the format is unknown)."""
    try:
        if fmt not in FORMATS:
            raise TaskError(f"unknown format {fmt!r} (expected one of {', '.join(FORMATS)})")
        return load_tasks(path, split=split, fmt=fmt)
    except TaskError as e:
        out.print(f"[red]error:[/red] {e}", markup=True, highlight=False)
        raise typer.Exit(2) from None


def print_rejected(out: Console, load: TaskSetLoad) -> None:
    """One `rejected: file:line: what` line per rejected task, then the counts."""
    for err in load.rejected:
        out.print(f"rejected: {err}", markup=False, highlight=False)
    out.print(f"{len(load.tasks)} task(s) loaded, {len(load.rejected)} rejected", highlight=False)


TASK_COLUMNS = ("id", "split", "category", "grading", "#files", "checker", "reference")


def task_row(t: Task) -> dict[str, object]:
    """One task as `tasks list` shows it (`--json`: these keys and values)."""
    return {
        "id": t.id,
        "split": t.split,
        "category": t.category,
        "grading": t.grading_type,
        "#files": len(t.workspace),
        "checker": t.checker.entry if t.checker else None,
        "reference": t.reference is not None,
    }


def _task_table(tasks: list[Task]) -> Table:
    table = Table(*TASK_COLUMNS)
    for t in tasks:
        row = task_row(t) | {"reference": "yes" if t.reference else "-"}
        table.add_row(*("-" if row[c] is None else str(row[c]) for c in TASK_COLUMNS))
    return table


@app.command("list")
def list_tasks(
    path: PathArg,
    split: SplitOpt = None,
    fmt: FormatOpt = "auto",
    as_json: Annotated[
        bool, typer.Option("--json", help="Print {tasks, rejected} as JSON (the counts to stderr).")
    ] = False,
) -> None:
    """Print the tasks of a task set and the rejected ones (file:line); exit 1 if any was rejected."""
    out = console(stderr=as_json)
    load = load_or_exit(out, path, split, fmt)
    if as_json:
        rejected = [str(err) for err in load.rejected]
        print(json.dumps({"tasks": [task_row(t) for t in load.tasks], "rejected": rejected}, indent=2))
    else:
        out.print(_task_table(load.tasks))
    print_rejected(out, load)
    if load.rejected:
        raise typer.Exit(1)


@app.command()
def show(path: PathArg, task_id: str, split: SplitOpt = None, fmt: FormatOpt = "auto") -> None:
    """Print one task: prompt, workspace files, checker files and rubric (checker code is not shown)."""
    out = console()
    load = load_or_exit(out, path, split, fmt)
    task = next((t for t in load.tasks if t.id == task_id), None)
    if task is None:
        out.print(f"no task {task_id!r} in {path}", markup=False)
        raise typer.Exit(1)
    out.print(f"id: {task.id}\nsplit: {task.split}\ncategory: {task.category}", markup=False)
    out.print(f"grading: {task.grading_type}\nsource: {task.source}", markup=False, highlight=False)
    out.print(f"prompt:\n{task.prompt}\n", markup=False, highlight=False)
    out.print("workspace files:", *(f"  {f.path}" for f in task.workspace), sep="\n", markup=False)
    if task.checker:
        files = (f"  {f.path}" for f in task.checker.files)
        out.print(f"checker (entry {task.checker.entry}):", *files, sep="\n", markup=False)
    for rule in task.rubric:
        out.print(f"rubric {rule.name} [{rule.file_path or '-'}]: {rule.description}", markup=False)
    out.print(f"reference: {task.reference.path if task.reference else '-'}", markup=False)


@app.command()
def generate(
    out: Annotated[Path, typer.Argument(help="Folder to write into (split folders are made inside).")],
    family: Annotated[
        str, typer.Option("--family", help="A family name, or `all` for every train family.")
    ] = "all",
    n: Annotated[int, typer.Option("--n", help="Instances per family.", min=1)] = 10,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the instance streams.")] = 0,
    split: Annotated[
        str, typer.Option("--split", help="train, or heldout: the held-out instances of train families.")
    ] = "train",
) -> None:
    """Write procedural tasks (ClawGym layout, checkers, reference and wrong solutions) under OUT.

    `--family all` is every train family; a held-out family (json_field) always goes to
    OUT/heldout_family/, train families to OUT/train/ or, with `--split heldout`, OUT/heldout_instances/.
    """
    from harnessrl.tasks.generate import TRAIN_FAMILIES, split_dir
    from harnessrl.tasks.generate import generate as write_tasks

    out_console = console()
    families = list(TRAIN_FAMILIES) if family == "all" else [family]
    try:
        folders = write_tasks(families, n, seed, out, split)
    except (ValueError, FileExistsError) as e:
        out_console.print(f"error: {e}", markup=False, highlight=False)
        raise typer.Exit(2) from None
    for name in families:
        where = out / split_dir(name, split)
        out_console.print(f"{name}: {n} task(s) in {where}", markup=False, highlight=False)
    out_console.print(f"wrote {len(folders)} task(s) under {out}", markup=False, highlight=False)
