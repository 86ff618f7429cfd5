"""Checkpoints that resume exactly: weights, optimizer, scheduler, RNG streams, step, data position.

A checkpoint is a folder `step-<n>/` holding `state.pt` (one torch.save of everything) and
`meta.json` (step, data position, for humans and for `latest()`). It is written to a temporary
folder and renamed into place, so a kill during saving leaves the previous checkpoint intact and never
a half-written one. Resuming restores the torch, Python `random` and numpy global generators, so a
loop that draws its data from them continues bit-identically on CPU.

Left out: sharded (FSDP) checkpoints and safetensors export; `Trainer.weights()` is the hand-off
for engines.
"""

from __future__ import annotations

import json
import os
import random
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch


@dataclass
class TrainState:
    """Where training is: optimizer steps done and the position in the caller's data stream."""

    step: int = 0
    data_position: int = 0


def rng_state() -> dict[str, Any]:
    state: dict[str, Any] = {
        "torch": torch.get_rng_state(),
        "python": random.getstate(),
        "numpy": np.random.get_state(),
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    torch.set_rng_state(state["torch"])
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def save_checkpoint(root: str | Path, state: TrainState, payload: dict[str, Any]) -> Path:
    """Write `root/step-<n>/` atomically; `payload` holds the state dicts (model, optimizer, ...)."""
    root = Path(root)
    final = root / f"step-{state.step:08d}"
    tmp = root / f".tmp-step-{state.step:08d}-{os.getpid()}"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    blob = dict(
        payload, train_state={"step": state.step, "data_position": state.data_position}, rng=rng_state()
    )
    torch.save(blob, tmp / "state.pt")
    (tmp / "meta.json").write_text(json.dumps({"step": state.step, "data_position": state.data_position}))
    if final.exists():
        shutil.rmtree(final)
    tmp.rename(final)
    return final


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


def prune_checkpoints(root: str | Path, keep: int) -> list[Path]:
    """Remove all but the `keep` newest complete checkpoints under `root` (keep <= 0: remove none).
    Incomplete folders are left alone (a save in progress). Returns the removed folders."""
    if keep <= 0:
        return []
    gone = complete_checkpoints(root)[:-keep]
    for path in gone:
        shutil.rmtree(path, ignore_errors=True)
    return gone


def load_checkpoint(path: str | Path) -> tuple[TrainState, dict[str, Any]]:
    """Read a checkpoint folder; restores the global RNG streams and returns (state, payload)."""
    blob: dict[str, Any] = torch.load(Path(path) / "state.pt", weights_only=False)
    set_rng_state(blob.pop("rng"))
    ts = blob.pop("train_state")
    return TrainState(step=ts["step"], data_position=ts["data_position"]), blob
