"""`scripts/harness_transfer`: parse the config, check it, run `experiments.transfer.run_transfer`, print
the tables.

    python -m harnessrl.commands.transfer [-c FILE] [-o section.key=value ...] [--fresh]
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Annotated

import typer

from harnessrl.commands import options as opt
from harnessrl.config import ConfigError, load_config, shipped_config
from harnessrl.experiments.transfer import check, run_transfer
from harnessrl.experiments.transfer_report import TABLE_FILE, table_markdown

TRANSFER_CONFIG = "transfer.toml"
"""The shipped configuration (`shipped_config`) `scripts/harness_transfer` runs when no --config is given."""


def main(
    config: Annotated[
        Path | None, typer.Option("--config", "-c", help="TOML config (default: configs/transfer.toml).")
    ] = None,
    override: opt.Override = None,
    fresh: opt.Fresh = False,
) -> None:
    """From one cold start, GRPO through each arm's harnesses; every policy through every eval harness."""
    try:
        cfg = load_config(config or shipped_config(TRANSFER_CONFIG), override or [])
        check(cfg)
    except ConfigError as e:
        raise typer.BadParameter(str(e)) from None
    from harnessrl.progress import quiet_loading

    quiet_loading()
    t0 = time.perf_counter()
    summary = asyncio.run(run_transfer(cfg, fresh=fresh, echo=lambda s: print(s, flush=True)))
    print(table_markdown(summary))
    print(
        f"total {time.perf_counter() - t0:.0f} s; table: {Path(cfg.transfer.out_dir) / TABLE_FILE}",
        flush=True,
    )


if __name__ == "__main__":
    typer.run(main)
