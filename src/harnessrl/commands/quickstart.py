"""`harnessrl quickstart`: parse the config, run `experiments.quickstart.run_quickstart`, print its table."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from harnessrl.commands import options as opt
from harnessrl.experiments.quickstart import TABLE_HEADER, run_quickstart, table_rows

QUICKSTART_CONFIG = "quickstart.toml"
"""The shipped configuration (`shipped_config`) `harnessrl quickstart` runs when no --config is given."""


def quickstart(
    config: opt.ShippedConfig = None,
    override: opt.Override = None,
    fresh: opt.Fresh = False,
) -> None:
    """Demonstrations -> SFT -> eval -> GRPO -> eval on generated tasks; prints the before/after table.

    Config: configs/quickstart.toml unless --config."""
    from rich.table import Table

    from harnessrl.evaluate.paired import sentence
    from harnessrl.progress import console

    cfg = opt.experiment_config(config, QUICKSTART_CONFIG, override)
    out = console()
    summary, seconds = opt.run_experiment(run_quickstart, cfg, fresh)
    table = Table(*TABLE_HEADER, title=f"before / after ({summary['heldout_tasks']} held-out tasks)")
    for row in table_rows(summary["policies"], summary["paired"]):
        table.add_row(*row)
    out.print(table)
    for name, c in summary["paired"].items():
        print(sentence({"policy": name, "baseline": c["baseline"], "overall": c}))
    root = Path(cfg.quickstart.out_dir)
    stages = {k: round(v) for k, v in summary["seconds"].items()}
    print(f"total {seconds:.0f} s; stages {json.dumps(stages)}")
    print(f"table: {root / 'quickstart.md'}; eval reports: {root / 'eval'}/*/eval.md; "
          f"RL metrics: {root / 'rl' / 'metrics.jsonl'}", flush=True)  # fmt: skip
    sys.stdout.flush()
