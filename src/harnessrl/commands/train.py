"""`harnessrl train`: the main job. Parse the config, load the tasks, run `train.loop.train`.

Across ranks: `torchrun --nproc-per-node N -m harnessrl train ...` on every rank, or
`train.trainer.world_size = N`, which starts this command again under torchrun (`train.ranks`).

With no `--config`, the demo configuration shipped with the package is used (`harnessrl/configs/demo.toml`,
`configs/demo.toml` in a checkout, found by `config.shipped_config`): SmolLM2-135M on the
embedded engine, Claude Code `--bare`, the bundled warmup tasks, two short steps on CPU.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from harnessrl.commands import options as opt
from harnessrl.config import Config, ConfigError, flag_overrides, shipped_config
from harnessrl.evaluate.defaults import applied_text, bounded_defaults
from harnessrl.tasks import load_configured
from harnessrl.types import EngineError, Task, TaskError

DEMO_CONFIG = "demo.toml"
"""The shipped configuration (`shipped_config`) `harnessrl train` runs when no --config is given."""


def train_config(config: Path | None, overrides: list[str], **flags: object) -> Config:
    """The run config: a file (default: the demo), the flags, then the -o overrides (last wins)."""
    extra = flag_overrides(flags)
    return opt.config_or_usage(config or shipped_config(DEMO_CONFIG), [*extra, *overrides])


def select_tasks(cfg: Config) -> list[Task]:
    """Tasks of `cfg.tasks` (split), of `train.categories` when given, then the first `tasks.limit`."""
    load = load_configured(cfg.tasks.model_copy(update={"limit": None}))
    for err in load.rejected:
        typer.echo(f"rejected: {err}", err=True)
    cats = cfg.train.categories
    tasks = [t for t in load.tasks if not cats or t.category in cats]
    if cfg.tasks.limit is not None:
        tasks = tasks[: cfg.tasks.limit]
    if not tasks:
        raise TaskError(f"no tasks in {cfg.tasks.path!r} (split={cfg.tasks.split!r}, categories={cats})")
    return tasks


def train(
    config: opt.ShippedConfig = None,
    override: opt.Override = None,
    steps: Annotated[int | None, typer.Option(help="Training steps (train.steps).")] = None,
    harness: Annotated[
        str | None, typer.Option(help="Train through this harness only (sets train.harnesses).")
    ] = None,
    tasks: Annotated[str | None, typer.Option(help="Task set path (tasks.path).")] = None,
    category: Annotated[
        list[str] | None, typer.Option(help="Only tasks of this category (repeatable; train.categories).")
    ] = None,
    resume: Annotated[bool, typer.Option("--resume", help="Continue from the latest checkpoint.")] = False,
) -> None:
    """Train the policy with RL through unmodified harnesses; one metrics line per step.

    Config: configs/demo.toml unless --config."""
    flags: dict[str, object] = {"train.steps": steps, "tasks.path": tasks, "train.resume": resume or None}
    if harness is not None:
        flags["train.harnesses"] = [harness]
    if category:
        flags["train.categories"] = list(category)
    cfg = train_config(config, override or [], **flags)
    t = cfg.train
    cfg, applied = bounded_defaults(
        cfg, "train", t.harnesses or ([] if t.harness_space else [cfg.rollout.harness])
    )
    from harnessrl.train.ranks import RankError

    try:
        start_ranks(cfg)
        run_rank(cfg, applied)
    except (TaskError, EngineError, ConfigError, RankError) as e:
        print(f"error: {e}", file=sys.stderr)
        raise typer.Exit(2) from None


def start_ranks(cfg: Config) -> None:
    """`train.trainer.world_size` > 1 outside torchrun: this command again under
    `torch.distributed.run`, one rank per process on this machine (replaces this process)."""
    from harnessrl.train.ranks import check_size, launch_argv, launched_size

    world = cfg.train.trainer.world_size
    if world > 1 and launched_size() == 1:
        argv = launch_argv(world, sys.argv[1:])
        typer.echo(f"starting {world} ranks: {' '.join(argv)}")
        sys.stdout.flush()
        os.execv(argv[0], argv)
    check_size(cfg.train.trainer)


def run_rank(cfg: Config, applied: list[str]) -> None:
    """The loop on rank 0 (tasks, progress, one line per step, naming the bounded defaults that
    `applied`); the trainer's part on the others."""
    from harnessrl.train.loop import train as run_training
    from harnessrl.train.ranks import launched_rank

    if launched_rank() > 0:  # no tasks, no rollouts, no output of its own (`train.ranks`)
        asyncio.run(run_training(cfg, [], echo=lambda line: None))
        return
    task_list = select_tasks(cfg)
    typer.echo(
        f"training {cfg.engine.model} on {len(task_list)} tasks, {cfg.train.steps} steps -> "
        f"{cfg.train.out_dir}/metrics.jsonl" + applied_text(applied)
    )
    from harnessrl.progress import Progress

    with Progress(summary=False) as progress:  # a live panel on a terminal; plain step lines in a log
        asyncio.run(
            run_training(cfg, task_list, echo=lambda line: print(line, flush=True), progress=progress)
        )
