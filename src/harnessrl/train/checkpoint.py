"""Checkpoints that resume exactly: weights, optimizer, scheduler, RNG streams, step, data position.

A checkpoint is a folder `step-<n>/` holding `state.pt` (one torch.save of everything) and
`meta.json` (step, data position, for humans and for `latest()`). It is written to a temporary
folder and renamed into place, so a kill during saving leaves the previous checkpoint intact and never
a half-written one. Resuming restores the torch, Python `random` and numpy global generators, so a
loop that draws its data from them continues bit-identically on CPU.

Sharded (FSDP) checkpoints (`save_sharded` / `load_sharded`) have the same folder and the same
atomic rename, but the model and optimizer go through `torch.distributed.checkpoint`: every rank
writes its own shards into `shards/` (no rank ever holds the full state), `state.pt` (written by rank
0) holds the scheduler, the train state and rank 0's RNG streams, and `rng-<rank>.pt` each rank's
own. Resuming under FSDP needs the same number of ranks (the RNG streams are per rank). Without FSDP
any number of processes reads a sharded checkpoint whole (DCP reshards: one process can resume what
N ranks wrote), each rank restoring its own RNG streams when the checkpoint has them, rank 0's
otherwise.

Left out: safetensors export; `Trainer.weights()` is the hand-off for engines.
"""

from __future__ import annotations

import os
import random
import shutil
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from harnessrl.formats.checkpoints import complete_checkpoints, read_checkpoint_meta, write_checkpoint_meta
from harnessrl.formats.checkpoints import latest_checkpoint as latest_checkpoint  # its home before


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


def checkpoint_path(root: str | Path, state: TrainState) -> Path:
    """The folder the checkpoint of `state` has under `root`."""
    return Path(root) / f"step-{state.step:08d}"


def is_sharded(path: str | Path) -> bool:
    """Whether the checkpoint at `path` was written by `save_sharded`."""
    return read_checkpoint_meta(Path(path)).get("sharded_ranks") is not None


def save_checkpoint(root: str | Path, state: TrainState, payload: dict[str, Any]) -> Path:
    """Write `root/step-<n>/` atomically; `payload` holds the state dicts (model, optimizer, ...)."""
    root = Path(root)
    final = checkpoint_path(root, state)
    tmp = root / f".tmp-step-{state.step:08d}-{os.getpid()}"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    blob = dict(
        payload, train_state={"step": state.step, "data_position": state.data_position}, rng=rng_state()
    )
    torch.save(blob, tmp / "state.pt")
    write_checkpoint_meta(tmp, state.step, state.data_position)
    if final.exists():
        shutil.rmtree(final)
    tmp.rename(final)
    return final


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


def save_sharded(
    root: str | Path, state: TrainState, model: Any, optimizer: Any, payload: dict[str, Any]
) -> Path:
    """Collective: every rank writes its FSDP shards of model + optimizer under `root/step-<n>/shards`;
    rank 0 writes `payload` (scheduler, ...), the train state and the meta, then renames into place."""
    import torch.distributed as dist
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import get_state_dict

    root = Path(root)
    rank = dist.get_rank()
    final, tmp = root / f"step-{state.step:08d}", root / f".tmp-step-{state.step:08d}-sharded"
    if rank == 0:
        if tmp.exists():
            shutil.rmtree(tmp)
        tmp.mkdir(parents=True)
    dist.barrier()
    model_sd, optim_sd = get_state_dict(model, optimizer)
    dcp.save({"model": model_sd, "optimizer": optim_sd}, checkpoint_id=str(tmp / "shards"))
    torch.save(rng_state(), tmp / f"rng-{rank}.pt")
    dist.barrier()
    if rank == 0:
        ts = {"step": state.step, "data_position": state.data_position}
        torch.save(dict(payload, train_state=ts, rng=rng_state()), tmp / "state.pt")
        write_checkpoint_meta(tmp, state.step, state.data_position, dist.get_world_size())
        if final.exists():
            shutil.rmtree(final)
        tmp.rename(final)
    dist.barrier()
    return final


def load_sharded(
    path: str | Path, model: Any, optimizer: Any, *, same_ranks: bool = True
) -> tuple[TrainState, dict[str, Any]]:
    """Load a `save_sharded` checkpoint into the model and optimizer (sharded: this rank's shards, a
    collective; plain: the whole state, also in a process without a group) and this rank's RNG
    streams; returns (state, the rest of the payload). `same_ranks`: refuse another world size."""
    import torch.distributed as dist
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict

    path = Path(path)
    ranks = read_checkpoint_meta(path).get("sharded_ranks")
    rank, world = (dist.get_rank(), dist.get_world_size()) if dist.is_initialized() else (0, 1)
    if same_ranks and ranks != world:
        raise ValueError(f"{path} was written by {ranks} sharded ranks; this run has {world}")
    model_sd, optim_sd = get_state_dict(model, optimizer)  # allocates the optimizer state to load into
    alone = not dist.is_initialized()
    with warnings.catch_warnings():  # DCP warns that it reads in one process, which is what `alone` asks
        warnings.filterwarnings("ignore", message="torch.distributed is disabled", category=UserWarning)
        dcp.load(
            {"model": model_sd, "optimizer": optim_sd}, checkpoint_id=str(path / "shards"), no_dist=alone
        )
    set_state_dict(model, optimizer, model_state_dict=model_sd, optim_state_dict=optim_sd)
    payload: dict[str, Any] = torch.load(path / "state.pt", weights_only=False)
    own = path / f"rng-{rank}.pt"
    rng = payload.pop("rng")
    set_rng_state(torch.load(own, weights_only=False) if own.is_file() else rng)
    ts = payload.pop("train_state")
    return TrainState(step=ts["step"], data_position=ts["data_position"]), payload
