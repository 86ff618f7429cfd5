"""`harnessrl rollout`: run tasks through a harness, one folder per rollout, and a summary table.

Adapter switches: `--option key=value` (repeatable) for the chosen harness, the same as
`-o rollout.harness_options.<harness>.<key>=value` (values parsed as TOML literals, as `-o` does);
e.g. `harnessrl rollout --harness claude-code --option bare=true`; options the harness cannot take
fail before anything starts. The first line says what runs and which defaults applied
(`evaluate.defaults`: bounded on the embedded CPU engine); on a terminal a progress bar shows,
otherwise one line per finished rollout. The reward shown is what training would score
(`reward_shown`: a failure the policy caused is 0), with a differing checker score labelled beside
it. `--json` prints the rollouts and the summary as one JSON object on stdout (everything else on
stderr). The exit status is 1 when no rollout ended `ok` (2 for bad arguments, options the harness
cannot take, no tasks, or an engine that cannot be built).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from harnessrl.commands import options as opt
from harnessrl.config import (
    TRAINABLE_STATUSES,
    Config,
    ConfigError,
    flag_overrides,
    load_config,
    parse_override,
)
from harnessrl.evaluate.defaults import applied_text, bounded_defaults
from harnessrl.formats.rollout_summary import summarize, write_summary
from harnessrl.harnesses import check_options, get_harness
from harnessrl.progress import console as make_console
from harnessrl.rollout.runner import RolloutJob
from harnessrl.rollout.session import RolloutStack
from harnessrl.tasks import load_tasks
from harnessrl.types import EngineError, HarnessError, Rollout, RolloutStatus, TaskError


def _config(config: Path | None, overrides: list[str], options: list[str], **flags: object) -> Config:
    extra = flag_overrides(flags)
    try:
        cfg = load_config(config, [*extra, *overrides])
        return with_options(cfg, options)
    except ConfigError as e:
        raise typer.BadParameter(str(e)) from None


def with_options(cfg: Config, options: list[str]) -> Config:
    """`--option key=value` -> `rollout.harness_options[<rollout.harness>][key] = value`."""
    if not options:
        return cfg
    table = {k: dict(v) for k, v in cfg.rollout.harness_options.items()}
    mine = table.setdefault(cfg.rollout.harness, {})
    for text in options:
        parts, value = parse_override(text)
        if len(parts) != 1:
            raise ConfigError(f"--option {text!r} must look like key=value (no dots)")
        mine[parts[0]] = value
    cfg.rollout.harness_options = table
    return cfg


def reward_shown(r: Rollout, train_statuses: Sequence[str]) -> str:
    """The reward as training scores it: an ok rollout's own; 0 for a failure the policy caused whose
    status `train.failures.train_statuses` trains; "-" for what training leaves out. A checker score
    that differs is shown after it, labelled (`0.000 (checker 0.250)`)."""
    if r.status is RolloutStatus.OK:
        return "-" if r.reward is None else f"{r.reward:.3f}"
    trained = r.fault == "policy" and r.status.value in train_statuses
    shown = "0.000" if trained else "-"
    if r.reward is not None and not (trained and r.reward == 0):
        shown += f" (checker {r.reward:.3f})"
    return shown


def progress_line(
    r: Rollout, done: list[Rollout], total: int, train_statuses: Sequence[str] = TRAINABLE_STATUSES
) -> str:
    """One line per finished rollout, for logs (stdout not a terminal)."""
    failed = sum(1 for x in done if x.status is not RolloutStatus.OK)
    reward = reward_shown(r, train_statuses)
    line = (
        f"[{len(done)}/{total}] {r.rollout_id} {r.status_label} reward {reward} calls {len(r.calls)} "
        f"{r.ended_at - r.started_at:.1f}s (failed so far {failed})"
    )
    if r.status is not RolloutStatus.OK and r.status_reason:
        line += f": {r.status_reason[:300]}"
    return line


def rollout_json(r: Rollout, train_statuses: Sequence[str] = TRAINABLE_STATUSES) -> dict[str, object]:
    """One rollout as `--json` prints it: the table's columns, its status reason and its folder."""
    return {
        "rollout_id": r.rollout_id,
        "task_id": r.task_id,
        "harness": r.harness,
        "status": r.status_label,
        "status_reason": r.status_reason,
        "reward": r.reward,
        "reward_shown": reward_shown(r, train_statuses),
        "calls": len(r.calls),
        "output_tokens": sum(len(c.output_ids) for c in r.calls),
        "seconds": round(r.ended_at - r.started_at, 3),
        "workdir": r.workdir,
    }


def _table(rollouts: list[Rollout], train_statuses: Sequence[str]) -> Table:
    table = Table("rollout", "task", "harness", "status", "reward", "calls", "out tok", "secs")
    for r in rollouts:
        style = "green" if r.status is RolloutStatus.OK else "red"
        table.add_row(
            r.rollout_id,
            r.task_id,
            r.harness,
            f"[{style}]{r.status_label}[/{style}]",
            reward_shown(r, train_statuses),
            str(len(r.calls)),
            str(sum(len(c.output_ids) for c in r.calls)),
            f"{r.ended_at - r.started_at:.1f}",
        )
    return table


async def _run(cfg: Config, console: Console, applied: list[str] | None = None) -> list[Rollout]:
    load = load_tasks(cfg.tasks.path, split=cfg.tasks.split, fmt=cfg.tasks.format)
    for err in load.rejected:
        console.print(f"rejected: {err}", markup=False)
    tasks = load.tasks[: cfg.tasks.limit] if cfg.tasks.limit else load.tasks
    if not tasks:
        raise TaskError(f"no tasks to run in {cfg.tasks.path!r} (split={cfg.tasks.split!r})")
    h = cfg.rollout.harness
    options = cfg.rollout.harness_options.get(h, {})
    check_options(get_harness(h), options)  # before any engine or sandbox is made
    jobs = [
        RolloutJob(t, h, rollout_id=f"{t.id}-{h.replace(':', '_')}-{i}", options=dict(options))
        for t in tasks
        for i in range(cfg.rollout.n)
    ]
    console.print(
        f"rollout: {len(tasks)} task(s) x {cfg.rollout.n} through {h} = {len(jobs)} rollout(s), "
        f"{cfg.rollout.concurrency} at once -> {cfg.rollout.out_dir}" + applied_text(applied or []),
        markup=False,
        highlight=False,
    )
    tty = console.is_terminal
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=not tty, disable=not tty) as progress:
        bar = progress.add_task("rollouts", total=len(jobs))
        done: list[Rollout] = []

        def on_done(r: Rollout) -> None:
            done.append(r)
            if not tty:
                line = progress_line(r, done, len(jobs), cfg.train.failures.train_statuses)
                console.print(line, markup=False, highlight=False)
            failed = sum(1 for x in done if x.status is not RolloutStatus.OK)
            calls = sum(len(x.calls) for x in done)
            tokens = sum(len(c.output_ids) for x in done for c in x.calls)
            running = min(cfg.rollout.concurrency, len(jobs) - len(done))
            progress.update(
                bar,
                advance=1,
                description=f"done {len(done)} failed {failed} running {running} "
                f"calls {calls} tokens {tokens}",
            )

        async with RolloutStack.from_config(cfg, tasks) as stack:
            assert stack.runner is not None
            return await stack.runner.run_many(jobs, on_done=on_done)


def show_results(
    rollouts: list[Rollout],
    out_dir: Path,
    console: Console,
    as_json: bool,
    train_statuses: Sequence[str] = TRAINABLE_STATUSES,
) -> None:
    """`summary.json`, then the table and the summary, or (`--json`) both as one JSON object on stdout."""
    summary = summarize(rollouts)
    write_summary(out_dir, summary)
    if as_json:
        print(
            json.dumps(
                {"rollouts": [rollout_json(r, train_statuses) for r in rollouts], "summary": summary},
                indent=2,
            )
        )
    else:
        console.print(_table(rollouts, train_statuses))
        console.print(f"summary: {summary}", markup=False, highlight=False)


def rollout(
    tasks: opt.Tasks = None,
    split: opt.Split = None,
    limit: opt.Limit = None,
    harness: Annotated[str | None, typer.Option(help="`harnessrl harness list`, whitebox:<code>.")] = None,
    engine: Annotated[str | None, typer.Option(help="hf | scripted (replays references) | vllm.")] = None,
    model: opt.Model = None,
    n: Annotated[int | None, typer.Option("--n", help="Rollouts per task.")] = None,
    concurrency: opt.Concurrency = None,
    timeout: Annotated[float | None, typer.Option(help="Agent timeout per rollout, seconds.")] = None,
    out: Annotated[str | None, typer.Option(help="Output folder (one sub-folder per rollout).")] = None,
    config: opt.ConfigFile = None,
    override: opt.Override = None,
    option: Annotated[
        list[str] | None,
        typer.Option(
            "--option",
            help="Adapter switch of the chosen harness, key=value (claude-code: bare=true; openclaw: "
            "api=...; shell: command=...); = -o rollout.harness_options.<harness>.<key>=value.",
        ),
    ] = None,
    as_json: Annotated[
        bool,
        typer.Option("--json", help="Print the rollouts and summary as JSON (the rest to stderr)."),
    ] = False,
) -> None:
    """Run every task through one harness N times; write one folder per rollout; print a summary.

    Exits 1 when no rollout ended ok."""
    cfg = _config(
        config,
        override or [],
        option or [],
        **{
            **opt.task_flags(tasks, split, limit),
            "rollout.harness": harness,
            "engine.type": engine,
            "engine.model": model,
            "rollout.n": n,
            "rollout.concurrency": concurrency,
            "rollout.timeout_s": timeout,
            "rollout.out_dir": out,
        },
    )
    cfg, applied = bounded_defaults(cfg, "rollout", [cfg.rollout.harness])
    console = make_console(stderr=as_json)
    try:
        rollouts = asyncio.run(_run(cfg, console, applied))
    except (TaskError, EngineError, HarnessError) as e:
        console.print(f"error: {e}", markup=False)
        raise typer.Exit(2) from None
    show_results(rollouts, Path(cfg.rollout.out_dir), console, as_json, cfg.train.failures.train_statuses)
    if not any(r.status is RolloutStatus.OK for r in rollouts):
        console.print(f"error: none of the {len(rollouts)} rollouts ended ok", markup=False)
        raise typer.Exit(1)
