"""The command line: parse config -> build objects -> call the library. No logic lives here.

Each command group is registered from its own module (`harnessrl.tasks.cli`, ...) so that the
parts of the project can grow independently; this file only wires them together.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import typer

app = typer.Typer(
    name="harnessrl",
    help="Reinforcement learning through unmodified agent harnesses.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)

# (module, attribute, name): each module defines a typer.Typer (a group) or a function (a command).
_GROUPS: list[tuple[str, str, str]] = [
    ("harnessrl.tasks.cli", "app", "tasks"),
    ("harnessrl.harnesses.cli", "app", "harness"),
    ("harnessrl.scaling.cli", "app", "harness-space"),
    ("harnessrl.trace.cli", "app", "tree"),
    ("harnessrl.rollout.cli", "rollout", "rollout"),
    ("harnessrl.train.cli", "train", "train"),
    ("harnessrl.experiments.sft_cli", "sft", "sft"),
    ("harnessrl.evaluate.cli", "eval_cmd", "eval"),
    ("harnessrl.experiments.quickstart", "quickstart", "quickstart"),
    ("harnessrl.proxy.cli", "serve", "serve"),
    ("harnessrl.proxy.cli", "calls_app", "calls"),
    ("harnessrl.report.cli", "plot", "plot"),
    ("harnessrl.report.cli", "report", "report"),
]

# (module, function, group, name): a command that joins a group defined in another package, e.g.
# `tasks check` runs checkers, so it lives in verify/ (tasks/ never imports verify/).
_GROUP_COMMANDS: list[tuple[str, str, str, str]] = [
    ("harnessrl.verify.cli", "check", "tasks", "check"),
]


@app.callback()
def _main() -> None:
    """harnessrl: train models with RL through the harness they will be deployed in."""


@app.command()
def version() -> None:
    """Print the harnessrl version."""
    from harnessrl import __version__

    typer.echo(__version__)


def _import(module: str, attr: str) -> typer.Typer | Callable[..., Any] | None:
    try:
        return getattr(importlib.import_module(module), attr)
    except ModuleNotFoundError as e:
        if e.name and e.name.startswith("harnessrl"):
            return None  # that part of the project is not built yet
        raise


def _register() -> None:
    groups: dict[str, typer.Typer] = {}
    for module, attr, name in _GROUPS:
        obj = _import(module, attr)
        if isinstance(obj, typer.Typer):
            app.add_typer(obj, name=name)
            groups[name] = obj
        elif obj is not None:
            app.command(name=name)(obj)
    for module, attr, group, name in _GROUP_COMMANDS:
        func = _import(module, attr)
        if func is not None and group in groups:
            groups[group].command(name=name)(func)


_register()
