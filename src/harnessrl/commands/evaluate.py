"""`harnessrl eval`: Pass@1 of one or more policies over (task, harness) pairs, R runs each.

The first line says what runs (tasks x harnesses x runs x policies) and which defaults applied
(`evaluate.defaults`: bounded on the embedded CPU engine); then one line per finished rollout, the
tables, and where the report went. `--json` prints the report's summaries as one JSON object instead.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Annotated

import typer
from rich.console import Console

from harnessrl.commands import options as opt
from harnessrl.config import Config, ConfigError, flag_overrides
from harnessrl.evaluate.defaults import applied_text, bounded_defaults
from harnessrl.progress import console, quiet_loading
from harnessrl.report.trackers import require
from harnessrl.types import EngineError, Rollout, TaskError


def eval_cmd(
    tasks: opt.Tasks = None,
    split: opt.Split = None,
    limit: opt.Limit = None,
    harness: Annotated[
        list[str] | None, typer.Option(help="Harness to evaluate through (repeatable; eval.harnesses).")
    ] = None,
    checkpoint: Annotated[
        list[str] | None,
        typer.Option(help="[label=]default | model folder | checkpoint | train run (repeatable)."),
    ] = None,
    runs: Annotated[int | None, typer.Option(help="Runs per (task, harness) pair (eval.runs).")] = None,
    engine: Annotated[str | None, typer.Option(help="hf | scripted (scripted replays references).")] = None,
    model: opt.Model = None,
    concurrency: opt.Concurrency = None,
    out: Annotated[str | None, typer.Option(help="Run folder: report + rollouts (eval.out_dir).")] = None,
    config: opt.ConfigFile = None,
    override: opt.Override = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the summaries as one JSON object (progress to stderr).")
    ] = False,
) -> None:
    """Evaluate policies through harnesses: Pass@1, mean score, pass@k / pass^k, spread; JSON + markdown."""
    flags: dict[str, object] = {
        **opt.task_flags(tasks, split, limit),
        "engine.type": engine,
        "engine.model": model,
        "eval.runs": runs,
        "rollout.concurrency": concurrency,
        "eval.out_dir": out,
    }
    if harness:
        flags["eval.harnesses"] = list(harness)
    if checkpoint:
        flags["eval.checkpoints"] = list(checkpoint)
    cfg = opt.config_or_usage(config, [*flag_overrides(flags), *(override or [])])
    cfg, applied = bounded_defaults(cfg, "eval", cfg.eval.harnesses or [cfg.rollout.harness])
    out_console = console(stderr=as_json)
    try:
        require(cfg.tracking)  # a tracker asked for but not installed fails before the rollouts
        report = asyncio.run(run_eval(cfg, out_console, applied))
    except (TaskError, EngineError, ConfigError, ValueError) as e:
        out_console.print(f"error: {e}", markup=False)
        raise typer.Exit(2) from None
    from harnessrl.evaluate.tables import json_summary, rich_tables, write_report

    paths = write_report(report, cfg.eval.out_dir, cfg.tracking, cfg.model_dump(mode="json"))
    if as_json:
        print(json.dumps(json_summary(report, paths), indent=2))
        return
    for table in rich_tables(report):
        out_console.print(table)
    out_console.print(f"report: {paths['markdown']} and {paths['json']}", markup=False, highlight=False)


async def run_eval(cfg: Config, out: Console, applied: list[str] | None = None) -> dict[str, object]:
    from harnessrl.evaluate.run import evaluate
    from harnessrl.tasks import load_configured

    quiet_loading()
    load = load_configured(cfg.tasks)
    for err in load.rejected:
        out.print(f"rejected: {err}", markup=False)
    if not load.tasks:
        raise TaskError(f"no tasks to evaluate in {cfg.tasks.path!r} (split={cfg.tasks.split!r})")

    def echo(line: str) -> None:
        out.print(line, markup=False, highlight=False)

    harnesses = cfg.eval.harnesses or [cfg.rollout.harness]
    policies = max(1, len(cfg.eval.checkpoints))
    total = len(load.tasks) * len(harnesses) * cfg.eval.runs * policies
    echo(
        f"eval: {len(load.tasks)} task(s) x {len(harnesses)} harness(es) x {cfg.eval.runs} run(s) x "
        f"{policies} polic{'y' if policies == 1 else 'ies'} = {total} rollouts -> {cfg.eval.out_dir}"
        + applied_text(applied or [])
    )
    return await evaluate(cfg, load.tasks, echo=echo, on_done=RolloutLines(total, echo))


class RolloutLines:
    """One line per finished rollout:
    `[eval 3/60] ok reward 1.000 | task_x whitebox:00000 | 12.3 s | rollout <id>`."""

    def __init__(self, total: int, echo: Callable[[str], None]) -> None:
        self.total, self.done, self.echo = total, 0, echo

    def __call__(self, rollout: Rollout) -> None:
        self.done += 1
        reward = "-" if rollout.reward is None else f"{rollout.reward:.3f}"
        seconds = rollout.ended_at - rollout.started_at if rollout.ended_at else 0.0
        self.echo(
            f"[eval {self.done}/{self.total}] {rollout.status_label} reward {reward} | {rollout.task_id} "
            f"{rollout.harness} | {seconds:.1f} s | rollout {rollout.rollout_id}"
        )
