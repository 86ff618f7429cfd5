"""The credit experiment's tables (`experiments.credit_tables`) on hand-made outcomes, and the mean
score as a paired metric (`evaluate.paired`, metric="score"), checked by hand."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harnessrl.evaluate.paired import paired, pooled
from harnessrl.evaluate.stats import Outcome
from harnessrl.experiments import credit_tables as ct

H = "whitebox:00020"


def outs(scores: list[float], *, harness: str = H, failed: tuple[int, ...] = ()) -> list[Outcome]:
    """One run of tasks t0..tn-1; a task passes at score 1; `failed` ones have status harness_error."""
    return [
        Outcome(f"t{i}", "c", harness, 0, 7, "harness_error" if i in failed else "ok", s, s, s >= 1.0)
        for i, s in enumerate(scores)
    ]


def test_score_differences_by_hand() -> None:
    a, b = outs([0.0, 0.5, 1.0, 0.25]), outs([0.5, 0.5, 1.0, 1.0])
    s = paired(a, b, metric="score", resamples=2_000)
    # d = (0.5, 0, 0, 0.75): mean 0.3125; up 2, same 2
    assert (s["difference"], s["up"], s["same"], s["down"]) == (0.3125, 2, 2, 0)
    assert paired(a, b, resamples=2_000)["difference"] == 0.25  # Pass@1: only t3 went to 1
    # pooled over two seeds: d_t is the mean of the seeds' d_t
    c = outs([0.0, 0.5, 1.0, 0.25])
    p = pooled([(a, b), (a, c)], metric="score", resamples=2_000)
    assert p["difference"] == pytest.approx(0.3125 / 2) and p["replicates"] == 2


def test_replicates_pair_seeds_and_the_cold_start_with_every_seed() -> None:
    reps = ct.replicates(["cold-start", "exclude-s0", "exclude-s1", "credited-s1", "credited-tree-s0"])
    assert reps == {
        "cold-start": {-1: "cold-start"},
        "exclude": {0: "exclude-s0", 1: "exclude-s1"},
        "credited": {1: "credited-s1"},
        "credited-tree": {0: "credited-tree-s0"},
    }
    assert ct._pairs(reps, "cold-start", "exclude") == [
        ("cold-start", "exclude-s0"),
        ("cold-start", "exclude-s1"),
    ]
    assert ct._pairs(reps, "exclude", "credited") == [("exclude-s1", "credited-s1")]
    assert ct._pairs(reps, "credited", "credited-tree") == []  # no seed in common
    assert ct.ordered(["credited-s0", "exclude-s1", "zeta-s0", "cold-start", "exclude-s0"]) == [
        "cold-start", "exclude-s0", "exclude-s1", "credited-s0", "zeta-s0"
    ]  # fmt: skip


def test_tables_from_a_run_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    policies = {
        "cold-start": outs([0.0, 0.5, 0.0, 0.0], failed=(2, 3)) + outs([1.0, 0.0], harness="claude-code"),
        "exclude-s0": outs([0.0, 0.5, 1.0, 0.0], failed=(3,)) + outs([1.0, 0.0], harness="claude-code"),
        "credited-s0": outs([0.5, 0.5, 1.0, 0.5]) + outs([1.0, 1.0], harness="claude-code"),
    }
    for name, o in policies.items():
        folder = tmp_path / "eval" / name
        folder.mkdir(parents=True)
        report = {"outcomes": [x.as_dict() | {"policy": name} for x in o]}
        (folder / "eval.json").write_text(json.dumps(report))
    ct.main([str(tmp_path), "--resamples", "500"])
    text = capsys.readouterr().out
    wb = text[text.index(f"### {H}") :]
    assert "| cold-start | 0.000 | 0.125 | harness_error 2, ok 2 (n 4) |" in wb
    assert "| exclude-s0 | 0.250 | 0.375 | harness_error 1, ok 3 (n 4) |" in wb
    assert "| credited-s0 | 0.250 | 0.625 | ok 4 (n 4) |" in wb
    assert wb.index("| cold-start |") < wb.index("| exclude-s0 |") < wb.index("| credited-s0 |")
    # credited - exclude: score d = (0.5, 0, 0, 0.5) -> +0.250; Pass@1 d = 0
    assert "| credited - exclude (1 seed) | +0.250 [" in wb and "] | +0.000 [+0.000, +0.000] |" in wb
    assert "outcome - exclude" not in text  # an arm that did not run has no row
    cc = text[text.index("### claude-code") : text.index(f"### {H}")]
    assert "| credited - cold-start (1 seed) | +0.500 [" in cc  # d = (0, 1)


def test_an_empty_run_folder_says_so(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match=r"no eval/<policy>/eval\.json yet"):
        ct.main([str(tmp_path)])


def test_rl_rows_count_compactions_mixed_groups_used_segments_and_credit_moved(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`rl_rows` from an arm's rollout folders: the captured whitebox:00020 rollout (a helper, one
    summary the rest ran on) and its first four calls (the helper and the step after it, no
    summary). Task t1: two that compact (rewards 1, 0.5) and one that does not (0), so under
    `credited` the summaries are measured against the compacting pair, not the group: credit moves
    part of the step's weight; task t2: a group of one (dropped by GRPO's minimum group size)."""
    from harnessrl.formats.calls import read_calls
    from harnessrl.formats.rollout_dir import write_rollout
    from harnessrl.types import Rollout, group_id

    calls = read_calls(Path(__file__).parent / "fixtures" / "segments" / "whitebox-00020" / "calls.jsonl")

    def put(arm: str, name: str, task: str, mine: list[Any], reward: float) -> None:
        folder = tmp_path / f"arm-{arm}-s0" / "rollouts" / name
        folder.mkdir(parents=True, exist_ok=True)
        gid = group_id(task, H)
        rollout = Rollout(rollout_id=f"s000000-{name}", task_id=task, harness=H, group_id=gid, calls=mine)
        write_rollout(folder, rollout.model_copy(update={"reward": reward}))

    for arm in ("credited-300", "outcome-300"):
        put(arm, "a", "t1", calls, 1.0)
        put(arm, "a2", "t1", calls, 0.5)
        put(arm, "b", "t1", calls[:4], 0.0)
        put(arm, "c", "t2", calls, 1.0)
    (tmp_path / "arm-exclude-s0" / "rollouts").mkdir(parents=True)  # no rollouts yet: no row
    counts = ["4", "3", "1 of 2", "3 of 3", "4 of 4"]
    assert ct.rl_rows(tmp_path) == [
        ["outcome-300-s0", *counts, "-", "-"],
        ["credited-300-s0", *counts, "-", "-"],
    ]
    config = tmp_path / "credit.toml"
    config.write_text(
        "[transfer.arms]\ncredited-300 = ['whitebox:00020']\noutcome-300 = ['whitebox:00020']\n"
        "[transfer.arm_train]\ncredited-300 = { segments = 'credited' }\n"
        "outcome-300 = { segments = 'outcome' }\n"
    )
    (tmp_path / "eval" / "cold-start").mkdir(parents=True)
    (tmp_path / "eval" / "cold-start" / "eval.json").write_text(
        json.dumps({"outcomes": [x.as_dict() | {"policy": "cold-start"} for x in outs([1.0])]})
    )
    ct.main([str(tmp_path), "--resamples", "10", "--config", str(config)])
    out = capsys.readouterr().out
    # both arms hold the same rollouts, so what credit does (or would do) to them is the same; the
    # summaries: outcome gives a's its rollout's A = (1 - 0.5) / std(1, 0.5, 0) = 0.5 / 0.408 = +1.225
    # and a2's 0 (mean +0.612); credited measures them against each other: +1 and -1 (mean 0)
    for arm in ("outcome-300-s0", "credited-300-s0"):
        row = out.split(f"| {arm} | 4 | 3 | 1 of 2 | 3 of 3 | 4 of 4 | ")[1].split(" |\n")[0]
        moved, summary = row.split(" | ")
        assert 0.0 < float(moved) < 0.5, row  # the summaries' tokens, a part of two of three rollouts
        assert summary == "+0.000 / +0.612", row
    put("credited-300", "b", "t1", calls, 0.0)  # every rollout of t1 compacts: the group's baseline
    cfg = ct.TransferSections.model_validate(ct.tomllib.loads(config.read_text()))
    assert ct.rl_rows(tmp_path, cfg)[1][-2:] == ["0.000", "+0.000 / +0.000"]
