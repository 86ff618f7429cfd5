"""The evaluation numbers against a hand-computed case: 3 tasks x 4 runs of known outcomes.

    task A passes runs 0, 1, 3      (c = 3)
    task B passes none; run 2 timed out   (c = 0; the timeout counts, scores 0)
    task C passes runs 0, 2         (c = 2)

per-run pass rates: 2/3, 1/3, 1/3, 1/3 -> Pass@1 = 5/12; sample std 1/6, se 1/12.
pass@2 = mean(1 - C(1,2)/C(4,2), 0, 1 - C(2,2)/C(4,2)) = (1 + 0 + 5/6) / 3 = 11/18.
pass^2 = mean(C(3,2)/6, 0, C(2,2)/6) = (1/2 + 1/6) / 3 = 2/9.
"""

from __future__ import annotations

import math

import pytest

from harnessrl.evaluate.stats import Outcome, breakdown, pass_at_k, pass_hat_k, space_group, summarize
from harnessrl.evaluate.tables import markdown

PASSES = {"A": [1, 1, 0, 1], "B": [0, 0, 0, 0], "C": [1, 0, 1, 0]}


def outcomes() -> list[Outcome]:
    out = []
    for task, row in PASSES.items():
        for run, passed in enumerate(row):
            status = "timeout" if (task, run) == ("B", 2) else "ok"
            reward = None if status != "ok" else (1.0 if passed else 0.5)
            out.append(
                Outcome(
                    task,
                    "cat1" if task != "C" else "cat2",
                    "codex",
                    run,
                    100 + run,
                    status,
                    reward,
                    reward or 0.0,
                    bool(passed),
                )
            )
    return out


def test_estimators_closed_forms() -> None:
    assert pass_at_k(4, 3, 2) == 1.0
    assert pass_at_k(4, 2, 2) == pytest.approx(5 / 6)
    assert pass_hat_k(4, 3, 2) == pytest.approx(1 / 2)
    assert pass_hat_k(4, 2, 4) == 0.0
    assert pass_at_k(5, 2, 1) == pass_hat_k(5, 2, 1) == pytest.approx(2 / 5)
    with pytest.raises(ValueError):
        pass_at_k(3, 1, 4)


def test_hand_computed_summary() -> None:
    s = summarize(outcomes(), runs=4)
    assert s["pairs"] == 3 and s["rollouts"] == 12
    assert s["per_run"] == pytest.approx([2 / 3, 1 / 3, 1 / 3, 1 / 3])
    assert s["pass1"] == pytest.approx(5 / 12)
    assert s["std"] == pytest.approx(1 / 6)
    assert s["se"] == pytest.approx(1 / 12)
    assert (s["min"], s["max"]) == pytest.approx((1 / 3, 2 / 3))
    assert s["pass_at_k"]["1"] == pytest.approx(5 / 12)
    assert s["pass_at_k"]["2"] == pytest.approx(11 / 18)
    assert s["pass_at_k"]["4"] == pytest.approx(2 / 3)  # A and C pass at least once
    assert s["pass_hat_k"]["2"] == pytest.approx(2 / 9)
    assert s["pass_hat_k"]["4"] == 0.0
    # pair pass rates 3/4, 0, 1/2: std of the mean over pairs
    assert s["se_pairs"] == pytest.approx(
        math.sqrt(((1 / 3) ** 2 + (5 / 12) ** 2 + (1 / 12) ** 2) / 2) / math.sqrt(3)
    )
    # scores: A 1+1+.5+1, B .5+.5+0(timeout)+.5, C 1+.5+1+.5 -> 8.0 / 12
    assert s["mean_score"] == pytest.approx(8.0 / 12)
    assert s["statuses"] == {"ok": 11, "timeout": 1}


def test_breakdowns_and_groups() -> None:
    by_cat = breakdown(outcomes(), 4, lambda o: o.category)
    assert by_cat["cat1"]["pass1"] == pytest.approx(3 / 8)  # runs: 1/2, 1/2, 0, 1/2
    assert by_cat["cat2"]["pass1"] == pytest.approx(1 / 2)
    assert by_cat["cat1"]["statuses"] == {"ok": 7, "timeout": 1}
    assert space_group("whitebox:00000", ["00000"]) == "in_space_train"
    assert space_group("whitebox:01220", ["00000"]) == "in_space_heldout"
    assert space_group("codex", ["00000"]) == "out_of_space"
    with pytest.raises(ValueError, match="runs"):
        summarize(outcomes()[:-1], runs=4)


def test_markdown_has_the_numbers() -> None:
    s = summarize(outcomes(), 4)
    report = {
        "config": {"num_tasks": 3, "tasks": "t", "split": None, "harnesses": ["codex"], "runs": 4,
                   "pass_threshold": 1.0, "engine": "scripted", "sampling": {"temperature": 1.0}, "seed": 0},
        "policies": {"base": {"summary": s, "by_harness": {"codex": s}}},
    }  # fmt: skip
    text = markdown(report)
    assert (
        "| base | 0.417 +- 0.083 (0.333-0.667) | 0.667 | 0.667 (k=4) | 0.000 (k=4) | 3x4 | ok 11 timeout 1 |"
        in text
    )
