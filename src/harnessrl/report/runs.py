"""Read a run folder, tolerating whatever is missing.

    RUN_DIR/metrics.jsonl           one record per training step (`train/loop.py`, `train/metrics.py`)
    RUN_DIR/tb/events.out.tfevents.*   the same scalars for TensorBoard
    RUN_DIR/rollouts/<id>/rollout.json (+ calls.jsonl)   every rollout of the run
    RUN_DIR/eval/*.json             eval reports (`harnessrl eval`); RUN_DIR/eval/*.md is linked
    RUN_DIR/eval/**/rollout.json    the eval's rollouts, when it keeps them under eval/ (found by
                                    `formats.rollout_dir.rollout_folders`: never inside a rollout)
    RUN_DIR/transfer.json           a harness-transfer experiment's matrices (`scripts/harness_transfer`)

An eval report is any JSON object: its scalar fields form a summary table, each field holding a list
of flat objects (rows) or an object of flat objects (keyed rows) becomes a table titled by the field,
anything deeper is shown as JSON. Files are read by `harnessrl.formats`; a malformed line or file is
skipped with a note, never fatal.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harnessrl.formats import FormatError
from harnessrl.formats.eval_report import read_eval
from harnessrl.formats.metrics import METRICS_FILE, read_metrics
from harnessrl.formats.rollout_dir import ROLLOUT_FILE, read_rollout_head, rollout_folders, rollout_step
from harnessrl.formats.transfer import TRANSFER_FILE, read_transfer

EVAL_GLOB = "eval/*.json"
"""Where `harnessrl report` looks for eval reports, relative to the run folder."""
ROLLOUT_HEAD_MAX = 1 << 20
"""rollout.json files bigger than this are not read (a head without its calls is a few KB)."""


@dataclass
class RolloutHead:
    """What the report shows of one rollout (its rollout.json without calls)."""

    folder: Path
    rollout_id: str
    task_id: str
    harness: str
    status: str
    reward: float | None
    step: int | None
    """Training step parsed from the id (`s000003-...`), None for other rollouts."""


@dataclass
class RunData:
    root: Path
    metrics: list[dict[str, Any]] = field(default_factory=list)
    evals: list[tuple[Path, dict[str, Any]]] = field(default_factory=list)
    eval_markdown: list[Path] = field(default_factory=list)
    rollouts: list[RolloutHead] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    transfer: dict[str, Any] | None = None
    """`transfer.json`, when the folder is a harness-transfer run and it could be read."""


def rollout_head(path: Path) -> RolloutHead | None:
    """What the report shows of the rollout.json at `path`; None when it cannot be read."""
    try:
        rollout = read_rollout_head(path, max_bytes=ROLLOUT_HEAD_MAX)
    except FormatError:
        return None
    return RolloutHead(
        folder=path.parent,
        rollout_id=rollout.rollout_id,
        task_id=rollout.task_id,
        harness=rollout.harness,
        status=rollout.status_label,
        reward=rollout.reward,
        step=rollout_step(rollout.rollout_id),
    )


def load_run(root: str | Path) -> RunData:
    """Everything the plots and the page need from a run folder (module docstring)."""
    run = RunData(Path(root))
    run.metrics, notes = read_metrics(run.root / METRICS_FILE)
    run.notes += notes
    for path in sorted(run.root.glob(EVAL_GLOB)):
        try:
            run.evals.append((path, read_eval(path)))
        except FormatError as e:
            run.notes.append(f"{path}: not readable as JSON ({e}), skipped")
    run.eval_markdown = sorted(run.root.glob("eval/*.md"))
    folders = rollout_folders(run.root / "rollouts", max_depth=1) + rollout_folders(run.root / "eval")
    heads = [rollout_head(d / ROLLOUT_FILE) for d in folders]
    run.rollouts = [h for h in heads if h is not None]
    if (run.root / TRANSFER_FILE).exists():
        try:
            run.transfer = read_transfer(run.root / TRANSFER_FILE)
        except FormatError as e:
            run.notes.append(f"{e}: the transfer matrix cannot be read, not drawn")
    return run
