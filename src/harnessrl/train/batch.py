"""Stage `trees` of a training step: its finished rollouts -> the trainable TreeSamples, every rollout
counted by its label (`train.loop`'s module docstring says which are trained).

    batch = trainable_batch(rollouts, cfg, uninformative)   # the three below, as the loop trains
    batch = collect_trees(rollouts, cfg)       # ok rollouts and trainable failures -> trees
    drop_groups(batch, uninformative, label)   # what dynamic sampling left untrained
    drop_small_groups(batch, min_size)         # GRPO groups under `train.failures.min_group_size`
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from harnessrl.rl.algo import ALGORITHMS
from harnessrl.trace import trace_rollout, with_filter_status
from harnessrl.train.config import TrainSections
from harnessrl.types import Rollout, RolloutStatus, TreeSample


@dataclass(frozen=True)
class KeptTree:
    """One trained rollout's tree and what the step record says of it."""

    sample: TreeSample
    harness: str
    label: str
    """Status label of its rollout (`ok`, or a failure trained with reward 0)."""
    stats: dict[str, Any]
    """The tree's statistics (`TraceTree.stats`)."""


class TreeBatch:
    """The trainable part of one step's rollouts, with the label of every rollout."""

    def __init__(self) -> None:
        self.trees: list[KeptTree] = []
        """One record per kept tree, in rollout order."""
        self.labels: Counter[str] = Counter()
        """Status label of every rollout: ok (trained) or why not; a failure trained with reward 0
        keeps its own label and is also counted in `failures_trained`."""
        self.failures_trained: Counter[str] = Counter()
        self.small_groups = 0
        """Groups dropped whole for being under `train.failures.min_group_size`."""
        self.zero_variance_dropped = 0
        """Samples of groups without reward variance that dynamic sampling left untrained."""

    @property
    def samples(self) -> list[TreeSample]:
        """The kept trees' samples, in order (what the trainer stages take)."""
        return [t.sample for t in self.trees]


def trainable_as_failure(r: Rollout, cfg: TrainSections) -> bool:
    """A failure the policy caused, of a status `train.failures.train_statuses` trains (reward 0)."""
    return r.fault == "policy" and r.status.value in cfg.train.failures.train_statuses


def collect_trees(rollouts: Sequence[Rollout], cfg: TrainSections) -> TreeBatch:
    """Stage `trees`: ok rollouts, and failures the policy caused that the failure policy trains
    (with reward 0, on the calls they made) -> TreeSamples; everything else counted by its label,
    not trained."""
    batch = TreeBatch()
    for r in rollouts:
        failure = r.status is not RolloutStatus.OK
        if failure and not trainable_as_failure(r, cfg):
            batch.labels[r.status_label] += 1
            continue
        if failure:
            r = r.model_copy(update={"reward": 0.0})
        tree = trace_rollout(r, cfg.trace.for_segments(cfg.train.segments))
        labelled = with_filter_status(r, tree)
        if labelled.status is not RolloutStatus.OK and not failure:
            batch.labels[labelled.status_label] += 1
            continue
        nothing = tree.filter_reason is not None or int(tree.stats.get("model_tokens_kept", 0)) == 0
        if nothing and failure:  # a failure keeps the status that explains it
            batch.labels[r.status_label] += 1
            continue
        if nothing:
            batch.labels["filtered:no_model_tokens"] += 1
            continue
        batch.labels[r.status_label] += 1
        if failure:
            batch.failures_trained[r.status_label] += 1
        batch.trees.append(KeptTree(tree.to_sample(), r.harness, r.status_label, tree.stats))
    return batch


def trainable_batch(
    rollouts: Sequence[Rollout], cfg: TrainSections, uninformative: set[str] | None = None
) -> TreeBatch:
    """The step's trainable trees, as the loop trains them: `collect_trees`, less the groups dynamic
    sampling left `uninformative` (when it ran) and, for a grouped algorithm, the groups under
    `train.failures.min_group_size` (capped at the group size)."""
    t = cfg.train
    batch = collect_trees(rollouts, cfg)
    if uninformative is not None:
        batch.zero_variance_dropped = drop_groups(batch, uninformative, "filtered:zero_variance")
    if ALGORITHMS[t.algorithm].grouped:
        drop_small_groups(batch, min(t.failures.min_group_size, t.group_size))
    return batch


def drop_small_groups(batch: TreeBatch, min_size: int) -> None:
    """GRPO: drop every group with fewer than `min_size` samples, relabelled `filtered:small_group`."""
    sizes = Counter(s.group_id for s in batch.samples)
    small = {g for g, n in sizes.items() if n < min_size}
    if small:
        drop_groups(batch, small, "filtered:small_group")
        batch.small_groups = len(small)


def drop_groups(batch: TreeBatch, groups: set[str], label: str) -> int:
    """Take every sample of `groups` out of the batch, relabelled `label`; returns how many."""
    dropped = [t for t in batch.trees if t.sample.group_id in groups]
    for t in dropped:
        batch.labels[t.label] -= 1
        batch.labels[label] += 1
        if t.label != "ok":
            batch.failures_trained[t.label] -= 1
    batch.labels = +batch.labels
    batch.failures_trained = +batch.failures_trained
    batch.trees = [t for t in batch.trees if t.sample.group_id not in groups]
    return len(dropped)


def group_summary(samples: Sequence[TreeSample]) -> dict[str, int]:
    """Trained groups and how many of them have zero reward variance (no GRPO signal)."""
    rewards: dict[str, list[float]] = defaultdict(list)
    for s in samples:
        rewards[s.group_id].append(s.reward)
    zero = sum(1 for rs in rewards.values() if max(rs) == min(rs))
    return {"trained": len(rewards), "zero_variance": zero}
