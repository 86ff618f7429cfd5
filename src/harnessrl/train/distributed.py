"""Data parallel with torch.distributed (gloo on CPU, NCCL on GPU), launched by torchrun.

Each rank packs and forwards its own shard of the step's trees; per-token weights use the global
number of rollouts N, so the all-reduced SUM of the ranks' gradients is exactly the one-process
gradient. Gradients are all-reduced once per optimizer step (after accumulation), not per micro-batch.

The step's metrics are the whole step's on every rank (`merge_metrics`: sums and counts added, maxima
taken over ranks). FSDP (sharded parameters) is `train/fsdp.py`; the RL loop across ranks is
`train/ranks.py`.

Left out: overlapping communication with backward (DDP buckets): one flat all-reduce per step is
simple and exact.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, TypeVar

import torch
import torch.distributed as dist

from harnessrl.rl.losses import Metrics

T = TypeVar("T")


def active() -> bool:
    """True inside an initialised process group with more than one rank."""
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def rank() -> int:
    return dist.get_rank() if active() else 0


def world_size() -> int:
    return dist.get_world_size() if active() else 1


def shard(items: Sequence[T]) -> list[T]:
    """This rank's items: every world_size-th one, starting at the rank."""
    return list(items[rank() :: world_size()])


def global_count(n: int) -> int:
    """Sum of `n` over ranks."""
    if not active():
        return n
    t = torch.tensor([n], dtype=torch.long)
    dist.all_reduce(t)
    return int(t.item())


def all_reduce_grads(params: Iterable[torch.nn.Parameter]) -> None:
    """Sum gradients over ranks in one flat buffer (a missing grad counts as zeros)."""
    if not active():
        return
    ps = list(params)
    for p in ps:
        if p.grad is None:
            p.grad = torch.zeros_like(p)
    flat = torch.cat([p.grad.reshape(-1) for p in ps if p.grad is not None])
    dist.all_reduce(flat)
    off = 0
    for p in ps:
        assert p.grad is not None
        n = p.grad.numel()
        p.grad.copy_(flat[off : off + n].view_as(p.grad))
        off += n


def broadcast_params(module: torch.nn.Module) -> None:
    """Make every rank start from rank 0's weights."""
    if not active():
        return
    for t in module.state_dict().values():
        dist.broadcast(t, src=0)


def sum_ints(values: Sequence[int]) -> list[int]:
    """Each of `values` summed over ranks."""
    if not active():
        return list(values)
    t = torch.tensor(list(values), dtype=torch.long)
    dist.all_reduce(t)
    return [int(v) for v in t.tolist()]


def merge_metrics(metrics: Metrics) -> Metrics:
    """The ranks' metrics as one (`Metrics.merge` in rank order: the same on every rank)."""
    if not active():
        return metrics
    parts: list[Any] = [None] * world_size()
    dist.all_gather_object(parts, (metrics.sums, metrics.counts, metrics.maxima))
    merged = Metrics()
    for sums, counts, maxima in parts:
        merged.merge(Metrics(sums=sums, counts=counts, maxima=maxima))
    return merged


def barrier() -> None:
    if active():
        dist.barrier()
