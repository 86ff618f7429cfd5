"""`harnessrl train` across ranks: one RL loop on rank 0, the update on every rank.

    with join_ranks(cfg.train.trainer, cfg.engine.device) as world:   # torchrun's ranks, or one
        trainer = build_trainer(cfg, device=world.device)
        if world.rank > 0:
            follow(trainer, world.channel)            # rank 0's orders, until it says stop
        else:
            ranks = Ranks(trainer, world.channel)     # the loop calls it instead of the trainer
            metrics = ranks.step(layouts, advantages, returns); ranks.weights(); ranks.save(root, 3)

Launch. `torchrun --nproc-per-node N -m harnessrl train ...` (several machines: torchrun's
`--nnodes` and rendezvous flags), or `harnessrl train` with `train.trainer.world_size = N`, which
starts itself under `torch.distributed.run --standalone` (`launch_argv`). `join_ranks` joins the
process group torchrun describes (gloo for a CPU trainer, NCCL for `cuda`, each rank on
`cuda:<LOCAL_RANK>`; collectives time out after `collective_timeout_s`) and opens the order channel,
a gloo group whose waits time out after `idle_timeout_s` (rank 0 runs a step's rollouts between
two orders).

Roles. Rank 0 runs `TrainLoop` as in one process: the rollouts (sandboxes, proxies, the engine or the
Ray driver), trees, advantages, metrics, the weight hand-off to the engine. Every other rank holds
only its trainer (its FSDP shard, or a replica without `fsdp`) and carries out orders: it starts no
sandbox, proxy or engine and writes no metrics. Each order is one call every rank makes together:

    step     each rank its share of the step's trees (`split_by_tokens`); `Trainer.step` on it; the
             trainer's metrics are the whole step's (`distributed.merge_metrics`)
    weights  `Trainer.weights()`: under FSDP a gather of the full state dict to rank 0, which hands
             it to the engine as today
    save     `Trainer.save`: sharded (each rank its shards, `checkpoint.save_sharded`) under FSDP;
             rank 0 writes the replicated state otherwise
    load     `Trainer.load` of the checkpoint rank 0 resumes from
    stop / abort   the run is over / rank 0 failed: every rank returns / raises `RankError`

The step equals the one-process step: per-token weights divide by the global tree count (gradients
are summed over ranks), so only the order of float sums differs.

Failures. A rank that dies ends the job: torchrun stops the others and reports which one failed.
Where no launcher notices (a machine lost), the next collective times out on the survivors and they
raise instead of hanging. Rank 0 failing between orders tells the others to abort with its error.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, Literal

import torch
import torch.distributed as dist

from harnessrl.config_section import ConfigError
from harnessrl.rl.packing import TreeLayout, prefix_order
from harnessrl.train import distributed as dp
from harnessrl.train.config import TrainerConfig
from harnessrl.train.trainer import Trainer


class RankError(RuntimeError):
    """A rank could not go on: rank 0 failed, or went silent past `train.trainer.idle_timeout_s`."""


@dataclass
class Order:
    """What rank 0 asks every rank to do (module docstring); `arg` is this rank's part."""

    kind: Literal["step", "weights", "save", "load", "stop", "abort"]
    arg: Any = None


class Channel:
    """Orders from rank 0 to the others: a gloo group of its own (also under NCCL), whose waits may
    last a step's rollouts."""

    def __init__(self, idle_timeout_s: float) -> None:
        self.timeout_s = idle_timeout_s
        self.group = dist.new_group(backend="gloo", timeout=timedelta(seconds=idle_timeout_s))

    def send(self, orders: Sequence[Order]) -> Order:
        """Rank 0: one order per rank; returns rank 0's own."""
        out: list[Any] = [None]
        dist.scatter_object_list(out, list(orders), src=0, group=self.group)
        order: Order = out[0]
        return order

    def receive(self) -> Order:
        """Ranks > 0: the next order."""
        out: list[Any] = [None]
        try:
            dist.scatter_object_list(out, None, src=0, group=self.group)
        except RuntimeError as e:
            raise RankError(
                f"rank {dist.get_rank()}: no order from rank 0 within {self.timeout_s:.0f} s "
                f"(train.trainer.idle_timeout_s), or rank 0 is gone: {e}"
            ) from e
        order: Order = out[0]
        return order


@dataclass
class World:
    """This process's place in the run."""

    rank: int
    size: int
    device: str
    """The trainer's device on this rank."""
    channel: Channel | None
    """None with one rank."""


def launched_size() -> int:
    """WORLD_SIZE as torchrun set it (1 when not under torchrun)."""
    return int(os.environ.get("WORLD_SIZE", "1"))


def launched_rank() -> int:
    """RANK as torchrun set it (0 when not under torchrun)."""
    return int(os.environ.get("RANK", "0"))


def check_size(tc: TrainerConfig) -> int:
    """The run's world size; ConfigError when `train.trainer.world_size` disagrees with the launch."""
    size = launched_size()
    if tc.world_size in (1, size):
        return size
    if size == 1:
        raise ConfigError(
            f"train.trainer.world_size = {tc.world_size} needs torchrun: `harnessrl train` starts it "
            f"itself, or run `torchrun --nproc-per-node {tc.world_size} -m harnessrl train ...`"
        )
    raise ConfigError(f"train.trainer.world_size = {tc.world_size}, but torchrun started {size} ranks")


@contextlib.contextmanager
def join_ranks(tc: TrainerConfig, device: str) -> Iterator[World]:
    """The ranks torchrun started (module docstring): joins its process group for the block, unless
    the caller already did; one rank and no group otherwise."""
    size = check_size(tc)
    own = size > 1 and not dist.is_initialized()
    if own:
        gpu = device.startswith("cuda")
        if gpu:
            torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
        timeout = timedelta(seconds=tc.collective_timeout_s)
        dist.init_process_group("nccl" if gpu else "gloo", timeout=timeout)
    channel = None
    try:
        if device.startswith("cuda") and dp.active():
            device = f"cuda:{torch.cuda.current_device()}"
        channel = Channel(tc.idle_timeout_s) if dp.active() else None
        yield World(rank=dp.rank(), size=dp.world_size(), device=device, channel=channel)
    finally:
        if own:
            dist.destroy_process_group()
        elif channel is not None:
            dist.destroy_process_group(channel.group)


def launch_argv(world_size: int, args: Sequence[str]) -> list[str]:
    """The command that runs `python -m harnessrl <args>` on `world_size` ranks of this machine."""
    run = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={world_size}"]
    return [*run, "-m", "harnessrl", *args]


def split_by_tokens(layouts: Sequence[TreeLayout], ranks: int) -> list[list[int]]:
    """Tree indices per rank (ascending): the trees in the order prefix sharing lays them out (equal
    prompts together), cut into `ranks` runs of about equal tokens (each tree goes to the rank its
    token midpoint falls in). Each rank's tokens are within one tree of an equal share, and trees
    sharing a prompt share a rank except at the cuts, so each rank's forests share as one process's
    do (`rl.packing.share_prefixes`)."""
    sizes = [L.num_tokens for L in layouts]
    total = max(sum(sizes), 1)
    shares: list[list[int]] = [[] for _ in range(ranks)]
    done = 0
    for i in prefix_order(layouts):
        shares[min(ranks - 1, (2 * done + sizes[i]) * ranks // (2 * total))].append(i)
        done += sizes[i]
    return [sorted(s) for s in shares]


def carry_out(trainer: Trainer, order: Order) -> Any:
    """One order on this rank (every rank runs the same call: module docstring)."""
    if order.kind == "step":
        layouts, advantages, returns = order.arg
        return trainer.step(layouts, advantages, returns=returns)
    if order.kind == "weights":
        return trainer.weights()
    if order.kind == "save":
        root, position = order.arg
        trainer.state.data_position = position
        return trainer.save(root)
    if order.kind == "load":
        trainer.load(order.arg)
        return None
    raise ValueError(f"not an order to carry out: {order.kind}")


def follow(trainer: Trainer, channel: Channel) -> int:
    """Ranks > 0: carry out rank 0's orders until it says stop; returns how many were carried out."""
    done = 0
    while True:
        order = channel.receive()
        if order.kind == "stop":
            return done
        if order.kind == "abort":
            raise RankError(f"rank 0 ended the run: {order.arg}")
        carry_out(trainer, order)
        done += 1


class Ranks:
    """Rank 0's handle on the trainers of every rank: each call orders all ranks to make it together
    and makes rank 0's own part (with one rank: the trainer itself)."""

    def __init__(self, trainer: Trainer, channel: Channel | None = None) -> None:
        self.trainer = trainer
        self.channel = channel
        self.size = dp.world_size() if channel is not None else 1
        self.pending = False
        """An order is out and rank 0 has not finished its part (the others may be in its collectives)."""

    def _order(self, orders: Sequence[Order]) -> Any:
        if self.channel is None:
            return carry_out(self.trainer, orders[0])
        self.pending = True
        result = carry_out(self.trainer, self.channel.send(orders))
        self.pending = False
        return result

    def _all(self, kind: Literal["weights", "save", "load"], arg: Any = None) -> Any:
        return self._order([Order(kind, arg)] * self.size)

    def step(
        self,
        layouts: Sequence[TreeLayout],
        advantages: Sequence[torch.Tensor],
        returns: Sequence[torch.Tensor] | None = None,
    ) -> dict[str, float]:
        """One optimizer step on every rank, each on its share of the trees; the step's metrics."""
        orders = []
        for share in split_by_tokens(layouts, self.size):
            rets = None if returns is None else [returns[i] for i in share]
            orders.append(Order("step", ([layouts[i] for i in share], [advantages[i] for i in share], rets)))
        result: dict[str, float] = self._order(orders)
        return result

    def weights(self) -> dict[str, torch.Tensor]:
        """The policy's full weights on rank 0 (`Trainer.weights`)."""
        result: dict[str, torch.Tensor] = self._all("weights")
        return result

    def save(self, root: str | Path, data_position: int) -> Path:
        """A checkpoint of every rank's trainer at `data_position` under `root` (`Trainer.save`)."""
        result: Path = self._all("save", (str(root), data_position))
        return result

    def load(self, path: str | Path) -> None:
        """Every rank's trainer from the checkpoint at `path` (`Trainer.load`)."""
        self._all("load", str(path))

    def close(self, error: BaseException | None = None) -> None:
        """Tell the other ranks the run is over (abort, naming `error`, when rank 0 failed). Not while
        an order is unfinished: the others wait inside its collectives, and torchrun's teardown or
        the collective timeout ends them."""
        if self.channel is None or self.pending:
            return
        reason = None if error is None else f"{type(error).__name__}: {error}"
        self.channel.send([Order("stop" if error is None else "abort", reason)] * self.size)
        self.channel = None
