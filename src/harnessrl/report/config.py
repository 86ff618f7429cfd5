"""Config section of `report/`: the experiment trackers.

Assembled into `harnessrl.config.Config`, which re-exports it. A section module imports only
pydantic, `Section` and other section modules, so `harnessrl.config` never imports what they configure.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from harnessrl.config_section import Section


class TrackingConfig(Section):
    """Where `train`, `sft`, `eval` and the experiments report, besides `metrics.jsonl` / `eval.json`
    and the TensorBoard events in `<run folder>/tb` (always written): `report.trackers`."""

    report_to: list[Literal["wandb", "mlflow", "trackio"]] = Field(default_factory=list)
    """Trackers that also get each run's scalars, config and eval tables, through their own clients
    in offline / local modes (no account, no network): wandb `mode="offline"` under
    `<run folder>/wandb` (`wandb sync` uploads it later), mlflow's file store at `<run folder>/mlruns`
    (`mlflow ui --backend-store-uri <run folder>/mlruns`), trackio's local database (`$TRACKIO_DIR`,
    else `~/.cache/huggingface/trackio`; `trackio show`). Each is an extra: `pip install
    'harnessrl[wandb]'` (or `[mlflow]`, `[trackio]`)."""
    project: str = "harnessrl"
    """Project (wandb, trackio) or experiment (mlflow) name."""
    run_name: str | None = None
    """Run name; None = the run folder as `<parent>/<name>` (e.g. `quickstart/rl`)."""
