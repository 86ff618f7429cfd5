"""The numbers of an evaluation, from plain per-rollout outcomes (no I/O, no torch).

    outcomes = [Outcome(task_id="t1", category="c", harness="codex", run=0, seed=..., status="ok",
                        reward=1.0, score=1.0, passed=True, rollout_id="..."), ...]
    summary = summarize(outcomes, runs=3)

The unit is a (task, harness) pair run R times. With P pairs and x_{p,r} = 1 when run r of pair p
passed (it ended `ok` with a score >= the pass threshold; every other status scores 0 and fails):

- Pass@1 = mean over runs r of (mean over pairs p of x_{p,r}): the mean of the per-run pass rates.
- spread: the per-run pass rates themselves, their sample standard deviation (n - 1) and its
  standard error std / sqrt(R) (None with one run); `se_pairs` is the standard error of the mean
  over pairs of each pair's pass rate (task-sampling noise, which dominates with few tasks).
- pass@k = mean over pairs of 1 - C(R - c, k) / C(R, k) (c = passed runs of the pair): the unbiased
  estimator of "at least one of k fresh runs passes" (Chen et al. 2021); pass^k = mean over pairs of
  C(c, k) / C(R, k): "all k fresh runs pass" (tau-bench). Both for k = 1..R; pass@1 = pass^1 = Pass@1.
- mean score: the mean over every rollout of its score (0 for a rollout that did not end `ok`).
- statuses: how many rollouts ended in each status label; none is dropped from any denominator.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from statistics import fmean, stdev
from typing import Any

from harnessrl.types import HarnessName


@dataclass(frozen=True)
class Outcome:
    """One evaluated rollout, reduced to what the report needs."""

    task_id: str
    category: str
    harness: str
    run: int
    seed: int
    status: str
    """The rollout's status label (`ok`, `timeout`, `filtered:<reason>`, ...)."""
    reward: float | None
    """What the verifier said (None when it did not run)."""
    score: float
    """The reward when the status is `ok`, else 0.0."""
    passed: bool
    rollout_id: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from n runs of which c passed: 1 - C(n - c, k) / C(n, k)."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass@k needs 0 <= c <= n and 1 <= k <= n (n={n}, c={c}, k={k})")
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Unbiased pass^k (all k runs pass) from n runs of which c passed: C(c, k) / C(n, k)."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass^k needs 0 <= c <= n and 1 <= k <= n (n={n}, c={c}, k={k})")
    return math.comb(c, k) / math.comb(n, k)


def _se(values: Sequence[float]) -> tuple[float | None, float | None]:
    """(sample std, standard error of the mean) of `values`; None with fewer than two."""
    if len(values) < 2:
        return None, None
    sd = stdev(values)
    return sd, sd / math.sqrt(len(values))


def summarize(outcomes: Sequence[Outcome], runs: int) -> dict[str, Any]:
    """Pass@1, mean score, spread, pass@k / pass^k for k = 1..runs, status counts (module docstring).

    Every (task, harness) pair must have exactly `runs` outcomes, runs 0..runs-1."""
    if not outcomes:
        return {"pairs": 0, "rollouts": 0, "pass1": None, "mean_score": None, "statuses": {}}
    pairs: dict[tuple[str, str], dict[int, Outcome]] = defaultdict(dict)
    for o in outcomes:
        pairs[(o.task_id, o.harness)][o.run] = o
    for key, by_run in pairs.items():
        if sorted(by_run) != list(range(runs)):
            raise ValueError(f"pair {key} has runs {sorted(by_run)}, expected 0..{runs - 1}")
    per_run = [fmean(float(p[r].passed) for p in pairs.values()) for r in range(runs)]
    passes = [sum(o.passed for o in p.values()) for p in pairs.values()]
    sd, se = _se(per_run)
    _, se_pairs = _se([c / runs for c in passes])
    ks = range(1, runs + 1)
    return {
        "pairs": len(pairs),
        "rollouts": len(outcomes),
        "pass1": fmean(per_run),
        "mean_score": fmean(o.score for o in outcomes),
        "per_run": per_run,
        "std": sd,
        "se": se,
        "se_pairs": se_pairs,
        "min": min(per_run),
        "max": max(per_run),
        "pass_at_k": {str(k): fmean(pass_at_k(runs, c, k) for c in passes) for k in ks},
        "pass_hat_k": {str(k): fmean(pass_hat_k(runs, c, k) for c in passes) for k in ks},
        "statuses": dict(sorted(Counter(o.status for o in outcomes).items())),
    }


def breakdown(
    outcomes: Sequence[Outcome], runs: int, key: Callable[[Outcome], str]
) -> dict[str, dict[str, Any]]:
    """`summarize` of each group of outcomes (by task, category, harness, ...), keys sorted."""
    groups: dict[str, list[Outcome]] = defaultdict(list)
    for o in outcomes:
        groups[key(o)].append(o)
    return {name: summarize(group, runs) for name, group in sorted(groups.items())}


def space_group(harness: str, train_codes: Sequence[str]) -> str:
    """Harness scaling: `in_space_train` / `in_space_heldout` for a `whitebox:<code>` (by the
    training design's codes), `out_of_space` for any other harness."""
    code = HarnessName.arg_of(harness, "whitebox")
    if code is None:
        return "out_of_space"
    return "in_space_train" if code in train_codes else "in_space_heldout"
