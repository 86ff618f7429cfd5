"""`metrics.jsonl`: one JSON object per training step, and its flat scalars.

    append_metrics(path, record)            the one writer (`train.metrics.MetricsSink`)
    truncate_metrics(path, before_step)     a resumed run drops the steps it will log again
    records, notes = read_metrics(path)     the one reader (`harnessrl plot`, `harnessrl report`)

A record is a JSON object with an integer `step`; `train/loop.py` fills it, `train/metrics.py` adds its
`outcomes`. The reader keeps the file's order, skips blank lines and returns a note (file and line)
for each line that is not valid UTF-8, not JSON, or not a record: a run killed mid-write leaves a
truncated last line, which must not hide the steps before it. A step logged twice counts once.

Scalars (`scalars(record)`; every tag a name that stays the same from step to step):

    reward/mean, reward/std, reward/<kind>/mean, reward/<kind>/std    ok rollouts; kind = harness family
                                                                      (`whitebox:01220` -> `whitebox`)
    reward/group_std                   mean within-group reward std over groups with >= 2 ok rollouts
    pass_rate                          passed / scheduled rollouts (a non-ok rollout counts as failed)
    groups/trained, groups/zero_variance
    tokens/per_call, tokens/unique, tokens/trained, tokens/sampled, tokens/per_call_mean
    tokens/dedup_ratio                 per-call tokens / unique tree tokens (what tree packing saves)
    status/<label>                     rollouts per status label: ok, timeout, filtered:<reason>, ...
    mismatch/abs_mean, mismatch/abs_max, mismatch/frac_truncated (TIS truncation fraction), tis/mean,
    entropy, kl/k3, grad_norm, loss/total, lr                         from the trainer, when it stepped
    rollouts/retried, rollouts/lost    extra tries of rollouts whose Ray worker died, and rollouts lost
                                       with their last worker (`sandbox_error`, infrastructure)
    rollouts/artifacts_missing         rollouts whose folder the driver did not find (Ray workers on
                                       machines without the shared `rollout.out_dir`)
    time/<stage>                       seconds: rollouts, trees, advantages, train, weights, checkpoint,
                                       step; time/verify is the verify share of the rollouts stage
                                       (rollouts wall time x verify seconds / rollout seconds: rollouts
                                       run concurrently, so verify has no wall time of its own)
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harnessrl.formats import untrusted_json

METRICS_FILE = "metrics.jsonl"
TRAINER_KEYS = (
    "mismatch/abs_mean",
    "mismatch/abs_max",
    "mismatch/frac_truncated",
    "tis/mean",
    "entropy",
    "kl/k3",
    "grad_norm",
    "loss/total",
    "lr",
)
"""Trainer metrics copied into the scalars (those the trainer reported)."""


def _put(out: dict[str, float], key: str, value: Any) -> None:
    if isinstance(value, bool):
        out[key] = float(value)
    elif isinstance(value, int | float):
        out[key] = float(value)


def scalars(record: Mapping[str, Any]) -> dict[str, float]:
    """The flat view of one metrics line (tags in the module docstring); missing values are left out."""
    out: dict[str, float] = {}
    reward = record.get("reward") or {}
    _put(out, "reward/mean", reward.get("mean"))
    _put(out, "reward/std", reward.get("std"))
    got = record.get("outcomes") or {}
    for kind, ms in (got.get("reward_by_kind") or {}).items():
        _put(out, f"reward/{kind}/mean", ms.get("mean"))
        _put(out, f"reward/{kind}/std", ms.get("std"))
    _put(out, "reward/group_std", got.get("group_reward_std"))
    _put(out, "pass_rate", got.get("pass_rate"))
    for k, v in (record.get("groups") or {}).items():
        _put(out, f"groups/{k}", v)
    tree = record.get("tree") or {}
    trainer = record.get("trainer") or {}
    _put(out, "tokens/per_call", tree.get("tokens_per_call"))
    _put(out, "tokens/unique", tree.get("tokens_unique"))
    _put(out, "tokens/trained", trainer.get("trained_tokens", 0))
    _put(out, "tokens/sampled", got.get("tokens_sampled"))
    _put(out, "tokens/per_call_mean", got.get("tokens_per_call_mean"))
    if tree.get("tokens_unique"):
        out["tokens/dedup_ratio"] = tree["tokens_per_call"] / tree["tokens_unique"]
    for key in ("retried", "lost", "artifacts_missing"):
        _put(out, f"rollouts/{key}", (got.get("workers") or {}).get(key))
    for label, n in (record.get("status") or {}).items():
        _put(out, f"status/{label}", n)
    for key in TRAINER_KEYS:
        _put(out, key, trainer.get(key))
    times = record.get("time") or {}
    for stage, sec in times.items():
        _put(out, f"time/{stage}", sec)
    secs = got.get("seconds") or {}
    busy = float(secs.get("agent", 0.0)) + float(secs.get("verify", 0.0))
    if busy > 0 and "rollouts" in times:
        out["time/verify"] = float(times["rollouts"]) * float(secs.get("verify", 0.0)) / busy
    return out


def metrics_line(record: Mapping[str, Any]) -> str:
    """One record as its line of `metrics.jsonl` (keys sorted, newline-terminated)."""
    return json.dumps(record, sort_keys=True) + "\n"


def append_metrics(path: Path, record: Mapping[str, Any]) -> None:
    """Append one step's record to `path`."""
    with path.open("a", encoding="utf-8") as f:
        f.write(metrics_line(record))


def read_metrics(path: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """The step records of `path` in file order ([] when it is missing) and a note per skipped line.
    A step logged twice is kept once, at its first place, as its last line has it (with a note)."""
    out: dict[int, dict[str, Any]] = {}
    notes: list[str] = []
    if not path.is_file():
        return [], notes
    for n, raw in enumerate(path.read_bytes().splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            rec = untrusted_json.loads(raw.decode("utf-8"), "line", keep_surrogates=True)
        except UnicodeDecodeError:
            notes.append(f"{path}:{n}: not UTF-8, skipped")
            continue
        except untrusted_json.UntrustedJSONError:
            notes.append(f"{path}:{n}: not JSON, skipped")
            continue
        if not (isinstance(rec, dict) and isinstance(rec.get("step"), int)):
            notes.append(f"{path}:{n}: not a metrics record, skipped")
            continue
        if rec["step"] in out:
            notes.append(f"{path}:{n}: step {rec['step']} logged again, this line kept")
        out[rec["step"]] = rec
    return list(out.values()), notes


def truncate_metrics(path: Path, before_step: int) -> int:
    """Keep only the records of steps before `before_step` (a resumed run logs the rest again);
    lines that are not records go with them. Writes `path` (empty when missing); returns how many
    records were kept."""
    records, _ = read_metrics(path)
    kept = [r for r in records if r["step"] < before_step]
    path.write_text("".join(metrics_line(r) for r in kept), encoding="utf-8")
    return len(kept)
