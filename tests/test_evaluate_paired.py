"""Paired differences between policies against hand-computed cases.

The bootstrap distribution of a mean over n tasks is the mean of n draws with replacement: for n <= 5
the test enumerates all n^n equally likely draws, so the exact distribution is known, and the
percentile interval (the inverse empirical CDF at 2.5% and 97.5%) of 10,000 seeded resamples must
land on its exact quantiles wherever the exact CDF is not within a few standard errors of 2.5% or 97.5%
at a jump (checked, so the case is not a lucky seed).

Case A, 5 tasks x 2 harnesses x 2 runs; policy b differs from a on task t1 only, where it passes all
4 runs that a fails: d = (1, 0, 0, 0, 0). The resampled mean is k/5 with k ~ Binomial(5, 1/5):
P(k = 0) = 0.32768 >= 0.025, so the lower end is 0; P(k <= 2) = 0.94208 < 0.975 <= P(k <= 3) =
0.99328, so the upper end is 3/5. The difference is 1/5 and the interval [0, 0.6] includes 0; the
per-task differences have sample std sqrt(0.2), so se over tasks = sqrt(0.2) / sqrt(5) = 0.2.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from fractions import Fraction
from pathlib import Path

import pytest

from harnessrl.config import Config
from harnessrl.evaluate.paired import bootstrap_interval, comparisons, outcomes_of, paired, sentence
from harnessrl.evaluate.stats import Outcome, summarize
from harnessrl.evaluate.tables import markdown, write_report
from harnessrl.experiments.quickstart import paired_over_previous, table_markdown, table_rows

HARNESSES = ("codex", "whitebox:00000")
HEADER = {
    "num_tasks": 5,
    "tasks": "t",
    "split": None,
    "harnesses": list(HARNESSES),
    "runs": 2,
    "pass_threshold": 1.0,
    "engine": "scripted",
    "sampling": {"temperature": 1.0},
    "seed": 0,
}


def outcomes(passes: dict[str, list[int]]) -> list[Outcome]:
    """passes[task] = 4 flags: (harness 0, run 0), (harness 0, run 1), (harness 1, run 0), (h1, r1)."""
    out = []
    for task, flags in passes.items():
        for i, flag in enumerate(flags):
            h, run = HARNESSES[i // 2], i % 2
            seed = 1000 + 10 * i + run
            out.append(Outcome(task, "c", h, run, seed, "ok", float(flag), float(flag), bool(flag)))
    return out


A = {f"t{i}": [0, 0, 0, 0] if i == 1 else [1, 0, 1, 1] for i in range(1, 6)}
B = dict(A, t1=[1, 1, 1, 1])


def exact_distribution(values: list[Fraction]) -> list[tuple[Fraction, Fraction]]:
    """(mean, probability) of the bootstrap mean, every n^n draw enumerated."""
    n = len(values)
    counts = Counter(sum(draw, Fraction(0)) / n for draw in itertools.product(values, repeat=n))
    total = n**n
    return sorted((m, Fraction(c, total)) for m, c in counts.items())


def exact_interval(values: list[Fraction], resamples: int, confidence: float = 0.95) -> tuple[float, float]:
    """Exact quantiles q_p = min{x: F(x) >= p}, after checking that F is not within 5 standard errors
    of p at a jump (then 10,000 resamples give the same quantile with near certainty)."""
    dist = exact_distribution(values)
    ends = []
    for p in ((1 - confidence) / 2, (1 + confidence) / 2):
        cdf = Fraction(0)
        margin = 5 * math.sqrt(p * (1 - p) / resamples)
        for mean, prob in dist:
            below = cdf
            cdf += prob
            if cdf >= Fraction(p).limit_denominator(10**6):
                assert float(cdf) - p > margin and p - float(below) > margin, "case too close to call"
                ends.append(float(mean))
                break
    return ends[0], ends[1]


def test_case_a_by_hand() -> None:
    c = paired(outcomes(A), outcomes(B), resamples=10_000, seed=0)
    assert c["difference"] == pytest.approx(0.2)
    assert (c["lo"], c["hi"]) == (0.0, 0.6)
    assert exact_interval([Fraction(1), *[Fraction(0)] * 4], 10_000) == (0.0, 0.6)
    assert c["excludes_zero"] is False
    assert (c["tasks"], c["up"], c["down"], c["same"]) == (5, 1, 0, 4)
    assert c["se_tasks"] == pytest.approx(0.2)
    # the difference is the difference of Pass@1 (se and se_pairs of each policy are untouched)
    sa, sb = summarize(outcomes(A), 2), summarize(outcomes(B), 2)
    assert c["difference"] == pytest.approx(sb["pass1"] - sa["pass1"])


@pytest.mark.parametrize(
    ("values", "by_hand"),
    [
        ([1, 1, 0.5, 0, 0], (0.1, 0.9)),  # a gain: the interval excludes 0
        ([1, 0.5, 0.5, 0.5, 0], (0.2, 0.8)),
        ([0.5, -0.5, 0, 0, 0], (-0.3, 0.3)),  # a wash: includes 0
        ([-1, -0.5, -0.5, 0], (-0.875, -0.125)),  # a loss: excludes 0 from below
        ([0.25, 0.25, 0.25], (0.25, 0.25)),  # no spread: a point
    ],
)
def test_interval_matches_the_exact_bootstrap_distribution(
    values: list[float], by_hand: tuple[float, float]
) -> None:
    exact = exact_interval([Fraction(v) for v in values], 10_000)
    assert exact == pytest.approx(by_hand, abs=1e-12)
    for seed in (0, 1, 12345):
        assert bootstrap_interval(values, 10_000, seed) == pytest.approx(exact, abs=1e-12)


def test_comparisons_overall_per_harness_and_the_markdown_line() -> None:
    a, b = outcomes(A), outcomes(B)
    # a third policy equal to a: every ordered pair later - earlier
    cmp = comparisons({"a": a, "b": b, "c": a}, resamples=10_000, seed=0)
    assert [(c["policy"], c["baseline"]) for c in cmp] == [("b", "a"), ("c", "a"), ("c", "b")]
    ba = cmp[0]
    assert list(ba["by_harness"]) == list(HARNESSES)
    for h in HARNESSES:  # per harness: t1 still gains 1 (both runs), others 0: the same case
        s = ba["by_harness"][h]
        assert (s["difference"], s["lo"], s["hi"]) == pytest.approx((0.2, 0.0, 0.6))
    ca, cb = cmp[1]["overall"], cmp[2]["overall"]
    assert (ca["difference"], ca["lo"], ca["hi"]) == (0.0, 0.0, 0.0)
    assert (cb["difference"], cb["lo"], cb["hi"]) == pytest.approx((-0.2, -0.6, 0.0))

    s = summarize(a, 2)
    report = {
        "config": HEADER,
        "policies": {"a": {"summary": s}, "b": {"summary": summarize(b, 2)}},
        "paired": cmp[:1],
    }
    text = markdown(report)
    assert "## Paired differences (Pass@1, policy - baseline, 95% bootstrap interval over tasks)" in text
    line = (
        "b over a: +0.200, 95% interval [+0.000, +0.600] over 5 tasks (1 up, 0 down; 10,000 resamples): "
        "includes 0."
    )
    assert sentence(ba) == line and line in text.splitlines()
    assert "| b | a | all | +0.200 | [+0.000, +0.600] | no | 1 / 0 / 4 | 0.200 |" in text.splitlines()
    assert "| b | a | codex | +0.200 | [+0.000, +0.600] | no | 1 / 0 / 4 | 0.200 |" in text.splitlines()
    # se and se_pairs stay in the per-policy rows
    assert s["se"] is not None and s["se_pairs"] is not None


def test_not_paired_is_refused_and_reports_round_trip() -> None:
    a, b = outcomes(A), outcomes(B)
    with pytest.raises(ValueError, match="same"):
        paired(a, b[:-1])
    reseeded = [Outcome(**{**o.as_dict(), "seed": o.seed + 1}) for o in b]
    with pytest.raises(ValueError, match="seed"):
        paired(a, reseeded)
    report = {"outcomes": [dict(o.as_dict(), policy=p) for p, os in (("a", a), ("b", b)) for o in os]}
    assert outcomes_of(report, "b") == b


def test_quickstart_table_has_the_paired_difference_over_the_row_above(tmp_path: Path) -> None:
    """The quickstart reads each stage's eval.json: sft over base, sft+rl over sft (case A)."""
    cfg = Config()
    runs = {"base": A, "sft": A, "sft+rl": B}
    results = {}
    for name, passes in runs.items():
        outs = outcomes(passes)
        report = {"outcomes": [dict(o.as_dict(), policy=name) for o in outs]}
        write_report(report | {"config": HEADER, "policies": {}}, tmp_path / name)
        results[name] = summarize(outs, 2)
    paired_rows = paired_over_previous(tmp_path, list(results), cfg)
    assert paired_rows["sft+rl"]["baseline"] == "sft" and paired_rows["sft+rl"]["hi"] == 0.6
    rows = table_rows(results, paired_rows)
    assert [r[2] for r in rows] == [
        "-",
        "+0.000 [+0.000, +0.000] over base",
        "+0.200 [+0.000, +0.600] over sft",
    ]
    text = table_markdown(results, cfg, paired_rows)
    # sft+rl passes runs 0 of all 10 (task, harness) pairs and runs 1 of 6: 1.0 and 0.6
    assert "| sft+rl | 0.800 +- 0.200 (0.600-1.000) | +0.200 [+0.000, +0.600] over sft | 0.800 |" in text
    assert text.rstrip().endswith(
        "sft+rl over sft: +0.200, 95% interval [+0.000, +0.600] over 5 tasks (1 up, 0 down; 10,000 "
        "resamples): includes 0."
    )
