"""Which checkpoint folders are complete: `<root>/step-<n>/` with `meta.json` and `state.pt`.

The trainer writes them (`train/checkpoint.py`, torch); the evaluator, the experiments and resume only
need to find the newest complete one, without importing torch.
"""

from __future__ import annotations

from pathlib import Path


def complete_checkpoints(root: str | Path) -> list[Path]:
    """The fully written `step-<n>/` folders under `root`, oldest first ([] if `root` is missing)."""
    root = Path(root)
    if not root.is_dir():
        return []
    return sorted(
        p for p in root.glob("step-*") if (p / "meta.json").is_file() and (p / "state.pt").is_file()
    )


def latest_checkpoint(root: str | Path) -> Path | None:
    """The complete checkpoint with the highest step under `root`, or None."""
    done = complete_checkpoints(root)
    return done[-1] if done else None
