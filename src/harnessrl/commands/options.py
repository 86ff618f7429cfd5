"""Typer option declarations that several commands share, each help text written once.

A command names them as parameter types (`split: opt.Split = None`, `from harnessrl.commands import
options as opt`); an option whose help names
the command's own section (`--out`) stays in the command.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Annotated, Any

import typer

from harnessrl.config import Config, ConfigError, load_config, shipped_config

Tasks = Annotated[str | None, typer.Option(help="Task set (default: the bundled set).")]
Split = Annotated[str | None, typer.Option(help="Only tasks of this split.")]
Limit = Annotated[int | None, typer.Option(help="At most this many tasks.")]
Model = Annotated[str | None, typer.Option(help="`default` or a local HF checkpoint.")]
Concurrency = Annotated[int | None, typer.Option(help="Rollouts at once.")]
ConfigFile = Annotated[Path | None, typer.Option("--config", "-c", help="TOML config file.")]
ShippedConfig = Annotated[
    Path | None, typer.Option("--config", "-c", help="TOML config (default: the command's shipped one).")
]
"""`--config` of a command that runs a shipped configuration without it (its docstring names which)."""
Override = Annotated[
    list[str] | None, typer.Option("-o", help="section.key=value, e.g. train.lr=1e-5 (repeatable).")
]
"""`-o section.key=value`: every command that loads a config."""
Fresh = Annotated[bool, typer.Option("--fresh", help="Redo every stage.")]


def config_or_usage(path: str | Path | None, overrides: list[str]) -> Config:
    """`load_config`, its `ConfigError` shown as a usage error (exit 2) naming what is wrong."""
    try:
        return load_config(path, overrides)
    except ConfigError as e:
        raise typer.BadParameter(str(e)) from None


def task_flags(tasks: str | None, split: str | None, limit: int | None) -> dict[str, object]:
    """The `tasks` section's flags (`--tasks`, `--split`, `--limit`) as `flag_overrides` keys."""
    return {"tasks.path": tasks, "tasks.split": split, "tasks.limit": limit}


def experiment_config(
    path: Path | None,
    shipped: str,
    overrides: list[str] | None,
    check: Callable[[Config], None] | None = None,
) -> Config:
    """An experiment command's config: `path`, else the shipped config `shipped`, with the overrides; then
    `check` (the experiment's own validation). A `ConfigError` from either is a usage error (exit 2)."""
    cfg = config_or_usage(path or shipped_config(shipped), overrides or [])
    if check is not None:
        try:
            check(cfg)
        except ConfigError as e:
            raise typer.BadParameter(str(e)) from None
    return cfg


def run_experiment(
    run: Callable[..., Coroutine[Any, Any, dict[str, Any]]], cfg: Config, fresh: bool
) -> tuple[dict[str, Any], float]:
    """Run an experiment's stages (`run(cfg, fresh=, echo=)`), each progress line printed as it comes;
    its summary and the wall seconds it took."""
    from harnessrl.progress import quiet_loading

    quiet_loading()
    t0 = time.perf_counter()
    summary = asyncio.run(run(cfg, fresh=fresh, echo=lambda s: print(s, flush=True)))
    return summary, time.perf_counter() - t0
