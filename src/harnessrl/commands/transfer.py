"""`scripts/harness_transfer`: parse the config, check it, run `experiments.transfer.run_transfer`, print
the tables.

    python -m harnessrl.commands.transfer [-c FILE] [-o section.key=value ...] [--fresh]
"""

from __future__ import annotations

from pathlib import Path

import typer

from harnessrl.commands import options as opt
from harnessrl.experiments.transfer import check, run_transfer
from harnessrl.experiments.transfer_report import TABLE_FILE, table_markdown

TRANSFER_CONFIG = "transfer.toml"
"""The shipped configuration (`shipped_config`) `scripts/harness_transfer` runs when no --config is given."""


def main(
    config: opt.ShippedConfig = None,
    override: opt.Override = None,
    fresh: opt.Fresh = False,
) -> None:
    """From one cold start, GRPO through each arm's harnesses; every policy through every eval harness.

    Config: configs/transfer.toml unless --config."""
    cfg = opt.experiment_config(config, TRANSFER_CONFIG, override, check)
    summary, seconds = opt.run_experiment(run_transfer, cfg, fresh)
    print(table_markdown(summary))
    print(f"total {seconds:.0f} s; table: {Path(cfg.transfer.out_dir) / TABLE_FILE}", flush=True)


if __name__ == "__main__":
    typer.run(main)
