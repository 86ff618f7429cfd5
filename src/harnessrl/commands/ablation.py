"""`scripts/scaling_ablation`: parse the config, run `experiments.ablation.run_ablation` (or put finished
runs side by side with `--combine`), print the table.

    python -m harnessrl.commands.ablation [-c FILE] [-o section.key=value ...] [--fresh]
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from harnessrl.commands import options as opt
from harnessrl.config import Config
from harnessrl.experiments.ablation import TABLE_HEADER, arm_space, run_ablation, table_rows

ABLATION_CONFIG = "scaling/ablation.toml"
"""The shipped configuration (`shipped_config`) `scripts/scaling_ablation` runs when no --config is given."""


def main(
    config: opt.ShippedConfig = None,
    override: opt.Override = None,
    fresh: opt.Fresh = False,
    combine: Annotated[
        list[Path] | None,
        typer.Option("--combine", help="Run nothing: put these finished runs (one per seed) side by side."),
    ] = None,
    reference: Annotated[
        str, typer.Option("--reference", help="With --combine: the policy the others are paired against.")
    ] = "cold-start",
) -> None:
    """One GRPO run per harness-space design from a shared cold start; prints the paper's table.

    Config: configs/scaling/ablation.toml unless --config."""
    from rich.table import Table

    from harnessrl.progress import console

    if combine:
        from harnessrl.experiments.ablation_seeds import combine as combine_runs
        from harnessrl.experiments.ablation_seeds import combined_markdown

        try:
            print(combined_markdown(combine, combine_runs(combine, reference), reference))
        except ValueError as e:
            raise typer.BadParameter(str(e)) from None
        return

    def check(cfg: Config) -> None:
        for arm in cfg.ablation.arms:
            arm_space(cfg, arm)

    cfg = opt.experiment_config(config, ABLATION_CONFIG, override, check)
    summary, seconds = opt.run_experiment(run_ablation, cfg, fresh)
    table = Table(
        *TABLE_HEADER, title=f"harness-scaling ablation ({summary['heldout_tasks']} held-out tasks)"
    )
    for row in table_rows(summary["policies"]):
        table.add_row(*row)
    console().print(table)
    stages = {k: round(v) for k, v in summary["seconds"].items()}
    print(f"total {seconds:.0f} s; stages {json.dumps(stages)}")
    print(f"table: {Path(cfg.ablation.out_dir) / 'ablation.md'}", flush=True)


if __name__ == "__main__":
    typer.run(main)
