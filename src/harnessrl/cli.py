"""The command line: parse config -> build objects -> call the library. No logic lives here.

Each command group lives in its own package's `cli` module (`harnessrl.tasks.cli`, ...); this file
imports them plainly and wires them together, so a command module that fails to import fails the
whole command line loudly instead of dropping its commands. No library module imports a `cli` module
(an import-linter contract in pyproject.toml).
"""

from __future__ import annotations

import typer

from harnessrl.evaluate import cli as evaluate_cli
from harnessrl.experiments import quickstart, sft_cli
from harnessrl.harnesses import cli as harnesses_cli
from harnessrl.images import cli as images_cli
from harnessrl.proxy import cli as proxy_cli
from harnessrl.report import cli as report_cli
from harnessrl.rollout import cli as rollout_cli
from harnessrl.scaling import cli as scaling_cli
from harnessrl.tasks import cli as tasks_cli
from harnessrl.trace import cli as trace_cli
from harnessrl.train import cli as train_cli
from harnessrl.verify import cli as verify_cli

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
app.command(name="quickstart")(quickstart.quickstart)
app.command(name="serve")(proxy_cli.serve)
app.add_typer(proxy_cli.calls_app, name="calls")
app.command(name="plot")(report_cli.plot)
app.command(name="report")(report_cli.report)
