"""The command line: parse config -> build objects -> call the library. No logic lives here.

Each command group is registered from its own module (`harnessrl.tasks.cli`, ...) so that the
parts of the project can grow independently; this file only wires them together.
"""

from __future__ import annotations

import importlib

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
    ("harnessrl.proxy.cli", "serve", "serve"),
    ("harnessrl.proxy.cli", "calls_app", "calls"),
]


@app.callback()
def _main() -> None:
    """harnessrl: train models with RL through the harness they will be deployed in."""


@app.command()
def version() -> None:
    """Print the harnessrl version."""
    from harnessrl import __version__

    typer.echo(__version__)


def _register() -> None:
    for module, attr, name in _GROUPS:
        try:
            obj = getattr(importlib.import_module(module), attr)
        except ModuleNotFoundError as e:
            if e.name and e.name.startswith("harnessrl"):
                continue  # that part of the project is not built yet
            raise
        if isinstance(obj, typer.Typer):
            app.add_typer(obj, name=name)
        else:
            app.command(name=name)(obj)


_register()
