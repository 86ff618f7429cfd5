"""Typer option declarations that several commands share, each help text written once.

A command names them as parameter types (`split: opt.Split = None`, `from harnessrl.commands import
options as opt`); an option whose help names
the command's own section (`--out`, `-o` with an example) stays in the command.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from harnessrl.config import Config, ConfigError, load_config

Tasks = Annotated[str | None, typer.Option(help="Task set (default: the bundled set).")]
Split = Annotated[str | None, typer.Option(help="Only tasks of this split.")]
Limit = Annotated[int | None, typer.Option(help="At most this many tasks.")]
Model = Annotated[str | None, typer.Option(help="`default` or a local HF checkpoint.")]
Concurrency = Annotated[int | None, typer.Option(help="Rollouts at once.")]
ConfigFile = Annotated[Path | None, typer.Option("--config", "-c", help="TOML config file.")]
Override = Annotated[list[str] | None, typer.Option("-o", help="Dotted override (repeatable).")]
"""`-o section.key=value` of the experiment commands (quickstart, transfer, ablation)."""
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
