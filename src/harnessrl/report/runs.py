"""Read a run folder, tolerating whatever is missing.

    RUN_DIR/metrics.jsonl           one record per training step (`train/loop.py`, `train/metrics.py`)
    RUN_DIR/tb/events.out.tfevents.*   the same scalars for TensorBoard
    RUN_DIR/rollouts/<id>/rollout.json (+ calls.jsonl)   every rollout of the run
    RUN_DIR/eval/*.json             eval reports (`harnessrl eval`); RUN_DIR/eval/*.md is linked
    RUN_DIR/eval/**/rollout.json    the eval's rollouts, when it keeps them under eval/

An eval report is any JSON object: its scalar fields form a summary table, each field holding a list
of flat objects (rows) or an object of flat objects (keyed rows) becomes a table titled by the field,
anything deeper is shown as JSON. A malformed line or file is skipped with a note, never fatal.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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


def read_metrics(path: Path, notes: list[str]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if not path.is_file():
        return out
    for n, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            notes.append(f"{path}:{n}: not JSON, skipped")
            continue
        if isinstance(rec, dict) and isinstance(rec.get("step"), int):
            out.append(rec)
        else:
            notes.append(f"{path}:{n}: not a metrics record, skipped")
    return out


def _step_of(rollout_id: str) -> int | None:
    head = rollout_id.split("-", 1)[0]
    return int(head[1:]) if head.startswith("s") and head[1:].isdigit() else None


def read_rollout_head(path: Path) -> RolloutHead | None:
    try:
        if path.stat().st_size > ROLLOUT_HEAD_MAX:
            return None
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    if not isinstance(raw, dict):
        return None
    status = str(raw.get("status", ""))
    if status == "filtered" and raw.get("status_reason"):
        status = f"filtered:{raw['status_reason']}"
    reward = raw.get("reward")
    rid = str(raw.get("rollout_id", path.parent.name))
    return RolloutHead(
        folder=path.parent,
        rollout_id=rid,
        task_id=str(raw.get("task_id", "")),
        harness=str(raw.get("harness", "")),
        status=status,
        reward=float(reward) if isinstance(reward, int | float) else None,
        step=_step_of(rid),
    )


def load_run(root: str | Path) -> RunData:
    """Everything the plots and the page need from a run folder (module docstring)."""
    run = RunData(Path(root))
    run.metrics = read_metrics(run.root / "metrics.jsonl", run.notes)
    for path in sorted(run.root.glob(EVAL_GLOB)):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as e:
            run.notes.append(f"{path}: not readable as JSON ({e}), skipped")
            continue
        if isinstance(data, dict):
            run.evals.append((path, data))
        else:
            run.notes.append(f"{path}: not a JSON object, skipped")
    run.eval_markdown = sorted(run.root.glob("eval/*.md"))
    heads = [read_rollout_head(p) for p in sorted(run.root.glob("rollouts/*/rollout.json"))]
    heads += [read_rollout_head(p) for p in sorted(run.root.glob("eval/**/rollout.json"))]
    run.rollouts = [h for h in heads if h is not None]
    return run
