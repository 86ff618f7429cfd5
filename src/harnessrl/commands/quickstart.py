"""`harnessrl quickstart`: parse the config, run `experiments.quickstart.run_quickstart`, print its table."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Annotated

import typer

from harnessrl.commands import options as opt
from harnessrl.config import shipped_config
from harnessrl.experiments.quickstart import TABLE_HEADER, run_quickstart, table_rows

QUICKSTART_CONFIG = "quickstart.toml"
"""The shipped configuration (`shipped_config`) `harnessrl quickstart` runs when no --config is given."""


def quickstart(
    config: Annotated[
        Path | None, typer.Option("--config", "-c", help="TOML config (default: the packaged one).")
    ] = None,
    override: opt.Override = None,
    fresh: opt.Fresh = False,
) -> None:
    """Demonstrations -> SFT -> eval -> GRPO -> eval on generated tasks; prints the before/after table."""
    from rich.table import Table

    from harnessrl.evaluate.paired import sentence
    from harnessrl.progress import console, quiet_loading

    cfg = opt.config_or_usage(config or shipped_config(QUICKSTART_CONFIG), override or [])
    quiet_loading()
    out = console()
    t0 = time.perf_counter()
    summary = asyncio.run(run_quickstart(cfg, fresh=fresh, echo=lambda s: print(s, flush=True)))
    table = Table(*TABLE_HEADER, title=f"before / after ({summary['heldout_tasks']} held-out tasks)")
    for row in table_rows(summary["policies"], summary["paired"]):
        table.add_row(*row)
    out.print(table)
    for name, c in summary["paired"].items():
        print(sentence({"policy": name, "baseline": c["baseline"], "overall": c}))
    root = Path(cfg.quickstart.out_dir)
    stages = {k: round(v) for k, v in summary["seconds"].items()}
    print(f"total {time.perf_counter() - t0:.0f} s; stages {json.dumps(stages)}")
    print(f"table: {root / 'quickstart.md'}; eval reports: {root / 'eval'}/*/eval.md; "
          f"RL metrics: {root / 'rl' / 'metrics.jsonl'}", flush=True)  # fmt: skip
    sys.stdout.flush()
