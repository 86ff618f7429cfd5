"""`harnessrl sft`: cold-start SFT on demonstrations and kept rollouts (`harnessrl.train.sft`)."""

from __future__ import annotations

import asyncio
import sys
from typing import Annotated

import typer

from harnessrl.commands import options as opt
from harnessrl.config import ConfigError, flag_overrides, load_config
from harnessrl.types import EngineError, TaskError


def sft(
    tasks: Annotated[str | None, typer.Option(help="Tasks to demonstrate (tasks.path).")] = None,
    split: opt.Split = None,
    limit: opt.Limit = None,
    harness: Annotated[str | None, typer.Option(help="Harness of the demonstrations (sft.harness).")] = None,
    rollouts: Annotated[
        list[str] | None, typer.Option(help="Rollout folder(s) to learn from too (sft.rollouts).")
    ] = None,
    no_demos: Annotated[bool, typer.Option("--no-demos", help="Only the rollout folders.")] = False,
    model: opt.Model = None,
    steps: Annotated[int | None, typer.Option(help="Optimizer steps (sft.steps).")] = None,
    out: Annotated[str | None, typer.Option(help="Output folder (sft.out_dir).")] = None,
    config: opt.ConfigFile = None,
    override: opt.Override = None,
) -> None:
    """Fine-tune on demonstrations (the real harness replaying references) and kept rollouts."""
    from harnessrl.progress import quiet_loading
    from harnessrl.tasks import load_configured
    from harnessrl.train.sft import sft as run_sft

    flags: dict[str, object] = {
        **opt.task_flags(tasks, split, limit),
        "sft.harness": harness,
        "engine.model": model,
        "sft.steps": steps,
        "sft.out_dir": out,
        "sft.demonstrations": False if no_demos else None,
    }
    if rollouts:
        flags["sft.rollouts"] = list(rollouts)
    try:
        cfg = load_config(config, [*flag_overrides(flags), *(override or [])])
        quiet_loading()
        load = load_configured(cfg.tasks)
        demos = (
            f"demonstrations of {len(load.tasks)} tasks through {cfg.sft.harness}, "
            if cfg.sft.demonstrations
            else ""
        )
        print(
            f"sft: {demos}{len(cfg.sft.rollouts)} rollout folder(s), then {cfg.sft.steps} steps on "
            f"{cfg.engine.model} -> {cfg.sft.out_dir}",
            flush=True,
        )
        result = asyncio.run(run_sft(cfg, load.tasks, echo=lambda line: print(line, flush=True)))
    except (TaskError, EngineError, ConfigError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        raise typer.Exit(2) from None
    print(f"sft: model {result['model']} (train with -o engine.model={result['model']}); "
          f"checkpoint {result['checkpoint']}")  # fmt: skip
