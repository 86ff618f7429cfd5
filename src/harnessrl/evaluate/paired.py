"""Paired differences of Pass@1 between policies run on the same tasks with the same seeds (pure).

    cmp = paired(base_outcomes, other_outcomes, resamples=10_000, seed=0)
    cmp["difference"], cmp["lo"], cmp["hi"], cmp["excludes_zero"]

Every policy of one evaluation runs run r of (task, harness) with the same seed (`eval_seed`), so
the outcomes pair up one to one. For a baseline A and a policy B:

- per task t: d_t = mean over the task's (harness, run) of passed_B - passed_A (one number per task,
  averaged over its runs and, for the overall view, its harnesses);
- difference = mean over tasks of d_t, which equals Pass@1(B) - Pass@1(A) (every pair has R runs);
- the interval: a percentile bootstrap over tasks, the unit the evaluation samples (task-sampling
  noise dominates with tens of tasks: `se_pairs`). `resamples` times, draw n tasks with replacement
  (`random.Random(seed).choices`, a fresh generator per interval, so each is reproducible alone) and
  take the mean of their d_t; the interval at `confidence` c is (q_{(1-c)/2}, q_{(1+c)/2}) of those
  means, q_p the ceil(p x resamples)-th smallest (the inverse of the empirical CDF, so the interval
  converges to the exact bootstrap distribution's quantiles);
- excludes_zero: lo > 0 or hi < 0; up / down / same: tasks with d_t > 0, < 0, = 0;
- se_tasks: the standard error of the mean of d_t (n - 1), the normal-theory counterpart.

`metric="score"` pairs the mean score instead (an `ok` rollout's checker score, 0 for a failure):
the same d_t, interval and counts with `score` in place of `passed`.

`comparisons` runs every later policy of a report against every earlier one, overall and per harness.
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import fields
from statistics import fmean, stdev
from typing import Any, Literal

from harnessrl.evaluate.stats import Outcome

Metric = Literal["passed", "score"]
"""The outcome field a paired difference compares: Pass@1 (`passed`) or mean score (`score`)."""

RESAMPLES = 10_000
CONFIDENCE = 0.95


def outcomes_of(report: Mapping[str, Any], policy: str) -> list[Outcome]:
    """The outcomes of one policy in a report dict (`eval.json`'s `outcomes`, tagged by policy)."""
    names = {f.name for f in fields(Outcome)}
    return [
        Outcome(**{k: v for k, v in o.items() if k in names})
        for o in report["outcomes"]
        if o["policy"] == policy
    ]


def task_differences(
    base: Sequence[Outcome], other: Sequence[Outcome], metric: Metric = "passed"
) -> dict[str, float]:
    """task id -> d_t of `metric` (module docstring); ValueError unless both ran the same (task,
    harness, run, seed) set."""

    def index(outs: Sequence[Outcome]) -> dict[tuple[str, str, int], Outcome]:
        return {(o.task_id, o.harness, o.run): o for o in outs}

    a, b = index(base), index(other)
    if set(a) != set(b) or len(a) != len(base) or len(b) != len(other):
        raise ValueError("paired differences need both policies on the same (task, harness, run) set")
    if any(a[k].seed != b[k].seed for k in a):
        raise ValueError("paired differences need the same seed for each run of both policies")
    per_task: dict[str, list[float]] = defaultdict(list)
    for key in sorted(a):
        per_task[key[0]].append(float(getattr(b[key], metric)) - float(getattr(a[key], metric)))
    return {t: fmean(ds) for t, ds in per_task.items()}


def quantile(sorted_values: Sequence[float], p: float) -> float:
    """The ceil(p x n)-th smallest of n sorted values (at least the first): the inverse empirical CDF."""
    k = max(1, math.ceil(p * len(sorted_values) - 1e-9))
    return sorted_values[min(k, len(sorted_values)) - 1]


def bootstrap_interval(
    values: Sequence[float], resamples: int = RESAMPLES, seed: int = 0, confidence: float = CONFIDENCE
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of `values` (module docstring)."""
    if not values:
        raise ValueError("no values to resample")
    if resamples < 1 or not 0 < confidence < 1:
        raise ValueError(f"need resamples >= 1 and 0 < confidence < 1 (got {resamples}, {confidence})")
    rng, n, data = random.Random(seed), len(values), list(values)
    means = sorted(math.fsum(rng.choices(data, k=n)) / n for _ in range(resamples))
    tail = (1.0 - confidence) / 2
    return quantile(means, tail), quantile(means, 1.0 - tail)


def paired(
    base: Sequence[Outcome],
    other: Sequence[Outcome],
    *,
    resamples: int = RESAMPLES,
    seed: int = 0,
    confidence: float = CONFIDENCE,
    metric: Metric = "passed",
) -> dict[str, Any]:
    """Difference of Pass@1 (or `metric`) other - base, its bootstrap interval over tasks and the
    task counts."""
    return summarize(list(task_differences(base, other, metric).values()), resamples, seed, confidence)


def pooled(
    replicates: Sequence[tuple[Sequence[Outcome], Sequence[Outcome]]],
    *,
    resamples: int = RESAMPLES,
    seed: int = 0,
    confidence: float = CONFIDENCE,
    metric: Metric = "passed",
) -> dict[str, Any]:
    """`paired` over several replicates (base, other) of one comparison on the same tasks (a policy
    trained with several seeds, each evaluated like the baseline): d_t is the mean over replicates
    of each replicate's d_t, then the bootstrap over tasks as in `paired`. ValueError unless every
    replicate holds the same tasks."""
    if not replicates:
        raise ValueError("no replicates to pool")
    per = [task_differences(a, b, metric) for a, b in replicates]
    if any(set(d) != set(per[0]) for d in per):
        raise ValueError("pooled differences need every replicate on the same tasks")
    values = [fmean(d[t] for d in per) for t in sorted(per[0])]
    return summarize(values, resamples, seed, confidence) | {"replicates": len(per)}


def summarize(values: Sequence[float], resamples: int, seed: int, confidence: float) -> dict[str, Any]:
    """The entry `paired` returns, from the per-task differences d_t."""
    lo, hi = bootstrap_interval(values, resamples, seed, confidence)
    return {
        "difference": math.fsum(values) / len(values),
        "lo": lo,
        "hi": hi,
        "excludes_zero": lo > 0 or hi < 0,
        "confidence": confidence,
        "resamples": resamples,
        "seed": seed,
        "tasks": len(values),
        "up": sum(v > 0 for v in values),
        "down": sum(v < 0 for v in values),
        "same": sum(v == 0 for v in values),
        "se_tasks": stdev(values) / math.sqrt(len(values)) if len(values) > 1 else None,
    }


def comparisons(
    by_policy: Mapping[str, Sequence[Outcome]],
    *,
    resamples: int = RESAMPLES,
    seed: int = 0,
    confidence: float = CONFIDENCE,
) -> list[dict[str, Any]]:
    """Every later policy against every earlier one (in the mapping's order): overall and per harness."""
    out = []
    names = list(by_policy)
    kw: dict[str, Any] = {"resamples": resamples, "seed": seed, "confidence": confidence}
    for i, base in enumerate(names):
        for other in names[i + 1 :]:
            a, b = by_policy[base], by_policy[other]
            harnesses = sorted({o.harness for o in a})
            by_harness = {
                h: paired([o for o in a if o.harness == h], [o for o in b if o.harness == h], **kw)
                for h in harnesses
            }
            entry = {"policy": other, "baseline": base, "overall": paired(a, b, **kw)}
            out.append(entry | {"by_harness": by_harness})
    return out


def signed(x: float) -> str:
    return f"{x:+.3f}"


def sentence(c: Mapping[str, Any]) -> str:
    """`sft+rl over sft: +0.083, 95% interval [+0.008, +0.158] over 60 tasks (11 up, 4 down; 10,000
    resamples): excludes 0.` for one comparison's overall entry."""
    s = c["overall"]
    verdict = "excludes 0" if s["excludes_zero"] else "includes 0"
    return (
        f"{c['policy']} over {c['baseline']}: {signed(s['difference'])}, {s['confidence']:.0%} interval "
        f"[{signed(s['lo'])}, {signed(s['hi'])}] over {s['tasks']} tasks ({s['up']} up, {s['down']} "
        f"down; {s['resamples']:,} resamples): {verdict}."
    )


PAIRED_COLUMNS = ("difference", "interval", "excludes 0", "tasks up / down / same", "se over tasks")


def paired_row(s: Mapping[str, Any]) -> list[str]:
    se = "-" if s.get("se_tasks") is None else f"{s['se_tasks']:.3f}"
    return [
        signed(s["difference"]),
        f"[{signed(s['lo'])}, {signed(s['hi'])}]",
        "yes" if s["excludes_zero"] else "no",
        f"{s['up']} / {s['down']} / {s['same']}",
        se,
    ]
