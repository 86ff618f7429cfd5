"""A step's training batch as exact numbers, for the golden test of `train.segments = "exclude"`.

    python tests/batch_golden.py OUT.json      # write the record (made once from main, see below)

`rollouts()` is a fixed set of rollouts with every shape the trace builder distinguishes (a chain, a
compaction, interleaved sub-agents, a moving tail, a retry, a policy failure trained with reward 0, a
group too small to train); `batch_record(rollouts, cfg)` runs them through the loop's own stages
(`collect_trees`, then `TrainLoop.optimize` with the optimizer update captured instead of run) and
returns the packed micro-batches: every per-token array (ids, positions, predecessors, subtree ends,
loss mask, sampling log-probs, advantages, weights, value targets) as plain lists. PPO's values are
a fixed function of the layout (not a model's), so the record depends only on the code under test.

`tests/fixtures/golden/exclude_batches.json` was written by this file run against the code of main
before segments existed (commit 2fb1988, `PYTHONPATH=<main>/src python tests/batch_golden.py OUT`);
`tests/test_rl_segments.py` checks that today's code gives the same record, bit for bit.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import torch

from harnessrl.config import Config
from harnessrl.types import ModelCall, Rollout, RolloutStatus


def call(rid: str, i: int, prompt: list[int], output: list[int], **kw: Any) -> ModelCall:
    """Call i of rollout `rid`; log-probs -(i + 1) / 10 - k / 64 (exact in float32)."""
    lps = [-(i + 1) / 8 - k / 64 for k in range(len(output))]
    return ModelCall(
        call_id=f"{rid}-c{i}", rollout_id=rid, index=i, dialect="openai_chat", prompt_ids=prompt,
        output_ids=output, output_logprobs=lps, system_digest=kw.pop("system", "main"), **kw,
    )  # fmt: skip


def _chain(rid: str) -> list[ModelCall]:
    return [
        call(rid, 0, [1, 2, 3, 10], [11, 12]),
        call(rid, 1, [1, 2, 3, 10, 11, 12, 13], [14]),
        call(rid, 2, [1, 2, 3, 10, 11, 12, 13, 14, 15], [16, 17]),
    ]


def _compaction(rid: str) -> list[ModelCall]:
    return [
        call(rid, 0, [1, 2, 3, 10], [11]),
        call(rid, 1, [1, 2, 3, 10, 11, 12], [13]),
        call(rid, 2, [1, 2, 3, 10, 11, 12, 13, 90], [91, 92], tags=["compaction_request"]),
        call(rid, 3, [1, 2, 3, 95, 91, 92, 96], [17]),
        call(rid, 4, [1, 2, 3, 95, 91, 92, 96, 17, 18], [19]),
    ]


def _subagents(rid: str) -> list[ModelCall]:
    return [
        call(rid, 0, [1, 2, 3, 10], [11]),
        call(rid, 1, [1, 2, 8, 20], [21], system="explore"),
        call(rid, 2, [1, 2, 3, 10, 11, 12], [13]),
        call(rid, 3, [1, 2, 9, 30], [31], system="plan"),
        call(rid, 4, [1, 2, 8, 20, 21, 22], [23], system="explore"),
        call(rid, 5, [1, 2, 3, 10, 11, 12, 13, 14], [15]),
        call(rid, 6, [1, 2, 9, 30, 31, 32], [33], system="plan"),
        call(rid, 7, [1, 2, 3, 10, 11, 12, 13, 14, 15, 16], [17]),
    ]


def _moving_tail(rid: str) -> list[ModelCall]:
    return [
        call(rid, 0, [1, 2, 3, 50], [11, 12]),
        call(rid, 1, [1, 2, 3, 11, 12, 13, 50], [14, 15]),
        call(rid, 2, [1, 2, 3, 11, 12, 13, 14, 15, 16, 50], [17, 18]),
    ]


def _retry(rid: str) -> list[ModelCall]:
    return [
        call(rid, 0, [1, 2, 3], [4, 5]),
        call(rid, 1, [1, 2, 3], [6, 7]),
        call(rid, 2, [1, 2, 3, 6, 7, 8], [9]),
        call(rid, 3, [1, 2, 3, 6, 7, 8, 9, 70], [71, 72]),
    ]


def rollouts() -> list[Rollout]:
    """Three groups: t1 (chain, compaction, sub-agents), t2 (moving tail, retry, a policy timeout
    trained with reward 0) and t3 (one rollout: under the minimum group size)."""

    def r(rid: str, group: str, reward: float, calls: list[ModelCall], **kw: Any) -> Rollout:
        return Rollout(
            rollout_id=rid, task_id=group, harness="whitebox:00000", group_id=f"{group}/whitebox:00000",
            reward=reward, calls=calls, **kw,
        )  # fmt: skip

    return [
        r("a", "t1", 1.0, _chain("a")),
        r("b", "t1", 0.0, _compaction("b")),
        r("c", "t1", 1.0, _subagents("c")),
        r("d", "t2", 0.5, _moving_tail("d")),
        r("e", "t2", 1.0, _retry("e")),
        r("f", "t2", 0.25, _chain("f"), status=RolloutStatus.TIMEOUT, fault="policy"),
        r("g", "t3", 1.0, _chain("g")),
    ]


def config(**train: Any) -> Config:
    base: dict[str, Any] = {"group_size": 3, "trainer": {"token_budget": 40}}
    base.update(train)
    return Config.model_validate({"engine": {"model": "tiny-qwen3"}, "train": base})


def _fixed_values(layouts: Any) -> list[torch.Tensor]:
    """PPO values that depend only on the layout: (position % 5) / 8, exact in float32."""
    return [(L.position_ids % 5).float() / 8 for L in layouts]


def batch_record(
    rollouts: list[Rollout], cfg: Config, metrics: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The loop's batch for `rollouts` under `cfg` (module docstring); the step's trainer metrics
    into `metrics` when given."""
    from harnessrl.engines.models import tiny_qwen3
    from harnessrl.train.batch import collect_trees, drop_small_groups
    from harnessrl.train.build import trainer_config
    from harnessrl.train.loop import TrainLoop
    from harnessrl.train.ranks import Ranks
    from harnessrl.train.step_record import StepClock
    from harnessrl.train.trainer import Trainer

    batch = collect_trees(rollouts, cfg)
    drop_small_groups(batch, min(cfg.train.failures.min_group_size, cfg.train.group_size))
    trainer = Trainer(tiny_qwen3()[0], trainer_config(cfg))
    prepared: list[Any] = []
    real_prepare = trainer.prepare

    def capture(layouts: Any, advantages: Any, **kw: Any) -> Any:
        prepared.append(real_prepare(layouts, advantages, **kw))
        return prepared[-1]

    trainer.prepare = capture  # type: ignore[method-assign]
    trainer.update = lambda step: {}  # type: ignore[method-assign]
    trainer.values = _fixed_values  # type: ignore[method-assign]
    loop = SimpleNamespace(cfg=cfg, trainer=trainer, ranks=Ranks(trainer))
    got, _ = TrainLoop.optimize(loop, batch, StepClock())  # type: ignore[arg-type]
    if metrics is not None:
        metrics.update(got)
    micro = []
    for b in prepared[0].micro if prepared else []:
        fields = ["input_ids", "position_ids", "pred_index", "subtree_end", "loss_mask", "rollout_logprobs"]
        rec = {name: getattr(b, name).tolist() for name in fields}
        rec["rollout_index"] = b.rollout_index.tolist()
        rec["items"], rec["offsets"] = list(b.items), list(b.offsets)
        rec["extras"] = {k: v.tolist() for k, v in sorted(b.extras.items())}
        micro.append(rec)
    return {
        "samples": [s.rollout_id for s in batch.samples],
        "labels": dict(sorted(batch.labels.items())),
        "micro": micro,
    }


CASES: dict[str, dict[str, Any]] = {
    "grpo": {},
    "grpo_raw": {"advantage": {"normalize_std": False}},
    "ppo": {"algorithm": "ppo"},
    "grpo_no_sharing": {"trainer": {"token_budget": 40, "share_prefixes": False}},
}
"""Train settings of each recorded batch (on top of `config()`'s)."""


def records() -> dict[str, Any]:
    return {name: batch_record(rollouts(), config(**train)) for name, train in CASES.items()}


if __name__ == "__main__":
    Path(sys.argv[1]).write_text(json.dumps(records(), indent=None, sort_keys=True) + "\n")
