"""The command line: parse config -> build objects -> call the library. No logic lives here.

Each command group lives in its own module of `harnessrl.commands` (`harnessrl.commands.tasks`, ...);
this file imports them plainly and wires them together, so a command module that fails to import
fails the whole command line loudly instead of dropping its commands. No library module imports a
command module (the import-linter layers contract in pyproject.toml).
"""

from __future__ import annotations

import typer

from harnessrl.commands import doctor as doctor_cli
from harnessrl.commands import evaluate as evaluate_cli
from harnessrl.commands import harnesses as harnesses_cli
from harnessrl.commands import images as images_cli
from harnessrl.commands import proxy as proxy_cli
from harnessrl.commands import quickstart as quickstart_cli
from harnessrl.commands import report as report_cli
from harnessrl.commands import rollout as rollout_cli
from harnessrl.commands import scaling as scaling_cli
from harnessrl.commands import sft as sft_cli
from harnessrl.commands import tasks as tasks_cli
from harnessrl.commands import trace as trace_cli
from harnessrl.commands import train as train_cli
from harnessrl.commands import verify as verify_cli

app = typer.Typer(
    name="harnessrl",
    help="Reinforcement learning through unmodified agent harnesses.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


@app.callback()
def _main() -> None:
    """harnessrl: train models with RL through the harness they will be deployed in."""


@app.command()
def version() -> None:
    """Print the harnessrl version."""
    from harnessrl import __version__

    typer.echo(__version__)


app.add_typer(tasks_cli.app, name="tasks")
tasks_cli.app.command(name="check")(verify_cli.check)  # it runs checkers, so it lives in verify/
app.add_typer(harnesses_cli.app, name="harness")
app.add_typer(images_cli.app, name="env")
app.add_typer(scaling_cli.app, name="harness-space")
app.add_typer(trace_cli.app, name="tree")
app.command(name="rollout")(rollout_cli.rollout)
app.command(name="train")(train_cli.train)
app.command(name="sft")(sft_cli.sft)
app.command(name="eval")(evaluate_cli.eval_cmd)
app.command(name="quickstart")(quickstart_cli.quickstart)
app.command(name="serve")(proxy_cli.serve)
app.add_typer(proxy_cli.calls_app, name="calls")
app.command(name="plot")(report_cli.plot)
app.command(name="report")(report_cli.report)
app.command(name="doctor")(doctor_cli.doctor)
