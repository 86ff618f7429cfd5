"""The harness-transfer experiment (`harnessrl.experiments.transfer`, `scripts/harness_transfer`): the
configuration checks, the matrix and the diagonal comparisons against a hand-computed case, the pooled
paired interval over seeds, the heat map of `harnessrl report`, and (slow) the Claude Code recipe end to
end: demonstrations through the real Claude Code -> SFT -> GRPO through it -> evaluation through it and
through a white-box harness, with stage reuse.

The hand-computed case: tasks t0 t1 t2, one eval run, harnesses W (whitebox:00000) and C (claude-code),
arms `wb` = [W] and `cc` = [C], seeds 0 and 1. Passed (t0 t1 t2):

    policy      on W      on C
    cold-start  0 1 0     0 0 0
    wb-s0       1 1 0     0 0 0
    wb-s1       1 1 1     0 0 0
    cc-s0       0 1 0     1 0 0
    cc-s1       0 0 0     1 1 0

- wb on W: Pass@1 per seed 2/3, 1 -> 5/6; d_t against the cold start: s0 (1, 0, 0), s1 (1, 0, 1),
  pooled (1, 0, 1/2): difference 1/2.
- cc on C: 1/3, 2/3 -> 1/2; d_t s0 (1, 0, 0), s1 (1, 1, 0), pooled (1, 1/2, 0): 1/2.
- cc on W: 1/3, 0 -> 1/6; d_t s0 (0, 0, 0), s1 (0, -1, 0): pooled (0, -1/2, 0): -1/6.
- The diagonal on W, wb over cc: s0 (1,1,0)-(0,1,0) = (1, 0, 0), s1 (1,1,1)-(0,0,0) = (1, 1, 1),
  pooled (1, 1/2, 1/2): 2/3. Its bootstrap distribution is exact: the mean of 3 draws is 1/2 + k/6
  with k ~ Binomial(3, 1/3) ones; P(k = 0) = 8/27 >= 0.025, so the lower end is 1/2; P(k <= 2) =
  26/27 < 0.975, so the upper end is 1 (P(k = 3) = 1/27 is 7 standard errors of 10,000 resamples
  above 0.025: not a lucky seed).
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest
from toy_scale import ONE_STEP_EACH, run_echoed, toy_tasks

from harnessrl.commands.transfer import TRANSFER_CONFIG as TRANSFER_NAME
from harnessrl.config import ConfigError, load_config, shipped_config
from harnessrl.evaluate.paired import pooled
from harnessrl.evaluate.stats import Outcome
from harnessrl.experiments.transfer import check, rl_tasks, run_transfer, sft_harnesses
from harnessrl.experiments.transfer_report import table_markdown, transfer_tables
from harnessrl.tasks import load_tasks

REPO = Path(__file__).resolve().parents[1]
TRANSFER_CONFIG = shipped_config(TRANSFER_NAME)
W, C = "whitebox:00000", "claude-code"
PASSED = {
    "cold-start": {W: "010", C: "000"},
    "wb-s0": {W: "110", C: "000"},
    "wb-s1": {W: "111", C: "000"},
    "cc-s0": {W: "010", C: "100"},
    "cc-s1": {W: "000", C: "110"},
}


def outcomes(policy: str) -> list[Outcome]:
    return [
        Outcome(f"t{i}", "x", h, 0, 100 + i, "ok", float(b), float(b), b == "1")
        for h, bits in PASSED[policy].items()
        for i, b in enumerate(bits)
    ]


def tables() -> dict:
    return transfer_tables(
        {p: outcomes(p) for p in PASSED},
        {"wb": [W], "cc": [C]},
        [0, 1],
        [W, C],
        {"heldout": ["t0", "t1", "t2"]},
        resamples=10_000,
        seed=0,
        confidence=0.95,
    )


def test_config_is_the_repository_one_and_evaluates_outside_the_arms() -> None:
    assert TRANSFER_CONFIG.resolve() == (REPO / "configs" / "transfer.toml").resolve()
    assert (REPO / "scripts" / "harness_transfer").stat().st_mode & 0o111
    cfg = load_config(TRANSFER_CONFIG, [])
    check(cfg)
    assert list(cfg.transfer.arms) == ["whitebox", "claude-code", "mixed"]
    assert sft_harnesses(cfg) == [W, C]
    trained = {h for hs in cfg.transfer.arms.values() for h in hs}
    assert set(cfg.transfer.eval_harnesses) - trained  # at least one harness no arm trains in
    assert len(cfg.transfer.seeds) >= 2
    # the same options reach Claude Code in training, demonstrations and evaluation
    assert cfg.train.harness_options[C] == cfg.eval.harness_options[C] == {"bare": True, "max_turns": 3}


def test_rl_tasks_are_fresh_instances_of_the_same_stream(tmp_path: Path) -> None:
    from harnessrl.evaluate.heldout import identity
    from harnessrl.tasks.generate import instances

    rl_tasks(["code_fix", "create_file"], 8, 8, 0, tmp_path / "rl")
    loaded = load_tasks(tmp_path / "rl").tasks
    assert Counter(t.category for t in loaded) == {"code_fix": 8, "create_file": 8}
    for family in ("code_fix", "create_file"):
        demonstrated = {identity(i) for i in instances(family, "train", 0, 8)}
        kept = [t for t in loaded if t.category == family]
        assert all(int(t.id.rsplit("_", 1)[1]) >= 8 for t in kept)
        stream = instances(family, "train", 0, 40)
        by_id = {f"task_{family}_train_s0_{j:04d}": identity(i) for j, i in enumerate(stream)}
        keys = [by_id[t.id] for t in kept]
        assert len(set(keys)) == 8 and not set(keys) & demonstrated, family


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("transfer.arms={}", "no arm to train"),
        ("transfer.arms={a = []}", "transfer.arms.a: no harness"),
        ('transfer.arms={cold-start = ["whitebox:00000"]}', "cannot name an arm"),
        ("transfer.seeds=[1, 1]", "repeated seed"),
        ('transfer.eval_harnesses=["nope"]', "unknown harness 'nope'"),
        ("transfer.eval_harnesses=[]", "no harness to evaluate through"),
        ("transfer.heldout_seed=0", "heldout_seed: 0 makes task sets the project trains on"),
        ("transfer.task_seed=7; transfer.heldout_seed=7", "heldout_seed: 7 makes task sets"),
        ('transfer.families=["json_field"]', "not a train family"),
        ("transfer.arm_train={nope = {dynamic_sampling_rounds = 3}}", "arm_train.nope: no such arm"),
        ('transfer.arm_train={whitebox = {seed = 3, harnesses = ["x"]}}', r"\['harnesses', 'seed'\] are set"),
        ("transfer.arm_train={whitebox = {dynamic_sampling_rounds = -1}}", "arm_train.whitebox: .*greater"),
        ("transfer.arm_train={whitebox = {dynamic_sampling = 3}}", "arm_train.whitebox: .*dynamic_sampling"),
    ],
)
def test_bad_configs_fail_before_anything_runs(override: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        check(load_config(TRANSFER_CONFIG, override.split("; ")))


def test_an_arm_sets_its_own_train_fields(tmp_path: Path) -> None:
    """`transfer.arm_train`: two arms through one harness differ in a training setting; the
    experiment's own per-arm fields stay the experiment's."""
    from harnessrl.experiments.transfer import arm_config

    cfg = load_config(REPO / "configs" / "dynamic_sampling.toml", [])
    check(cfg)
    assert cfg.transfer.arms == {"whitebox": [W], "whitebox-dynamic": [W], "whitebox-16": [W]}
    assert arm_config(cfg, "whitebox-16", 0, "m", tmp_path / "x").train.steps == 16
    on = arm_config(cfg, "whitebox-dynamic", 1, "sft-model", tmp_path / "on").train
    off = arm_config(cfg, "whitebox", 1, "sft-model", tmp_path / "off").train
    assert (on.dynamic_sampling_rounds, off.dynamic_sampling_rounds) == (3, 0)
    assert (on.seed, on.harnesses, on.out_dir) == (1, [W], str(tmp_path / "on"))
    assert on.model_dump(exclude={"dynamic_sampling_rounds", "out_dir"}) == off.model_dump(
        exclude={"dynamic_sampling_rounds", "out_dir"}
    )
    assert cfg.train.dynamic_sampling_rounds == 0  # the shared [train] is not changed
    # the loop still tells what a user set from what it fills in (train.trainer.lr from train.lr)
    assert "lr" not in on.trainer.model_fields_set
    nested = load_config(
        REPO / "configs" / "dynamic_sampling.toml",
        ["transfer.arm_train.whitebox={trainer = {grad_clip = 0.5}}"],
    )
    t = arm_config(nested, "whitebox", 0, "sft-model", tmp_path / "n").train.trainer
    assert (t.grad_clip, t.token_budget, t.attention) == (0.5, 2048, "tree")  # merged key by key


def test_step_groups_and_the_markdown_of_an_arm_with_its_own_settings() -> None:
    from harnessrl.experiments.transfer_report import step_groups

    records = [
        {"rollouts": 24, "groups": {"scheduled": 6, "informative": 2, "trained": 6, "zero_variance": 4}},
        {
            "rollouts": 40,
            "groups": {"scheduled": 10, "informative": 5, "resampled": 4, "trained": 5, "zero_variance": 0},
        },
    ]
    got = step_groups(records)
    assert got == {"rollouts": 32.0, "scheduled": 8.0, "informative": 3.5, "resampled": 2.0,
                   "trained": 5.5, "zero_variance": 2.0}  # fmt: skip
    assert step_groups([]) == {}
    summary = summary_of(tables()) | {
        "arm_train": {"cc": {"dynamic_sampling_rounds": 3}},
        "time_split": {
            "train_steps": {"cc-s0": {"rollouts": 20.0}},
            "train_groups": {"cc-s0": got},
            "rollouts": {},
        },
    }
    md = table_markdown(summary)
    assert "`cc` = claude-code (train.dynamic_sampling_rounds = 3)" in md
    assert "| run | rollouts | scheduled | informative | resampled | trained | zero_variance |" in md
    assert "| cc-s0 | 32 | 8 | 3.5 | 2 | 5.5 | 2 |" in md


def test_matrix_against_the_hand_computed_case() -> None:
    got = tables()
    m = got["matrix"]["heldout"]
    assert list(m) == ["cold-start", "wb", "cc"]
    assert m["cold-start"][W]["pass1"] == pytest.approx(1 / 3) and "vs_cold" not in m["cold-start"][W]
    assert m["wb"][W]["per_seed"] == pytest.approx([2 / 3, 1.0]) and m["wb"][W]["n"] == 3
    assert m["wb"][W]["pass1"] == pytest.approx(5 / 6)
    assert m["wb"][W]["vs_cold"]["difference"] == pytest.approx(0.5)
    assert m["wb"][W]["vs_cold"]["replicates"] == 2
    assert m["cc"][C]["pass1"] == pytest.approx(0.5)
    assert m["cc"][C]["vs_cold"]["difference"] == pytest.approx(0.5)
    assert (m["cc"][C]["vs_cold"]["up"], m["cc"][C]["vs_cold"]["down"]) == (2, 0)
    assert m["cc"][W]["vs_cold"]["difference"] == pytest.approx(-1 / 6)
    assert (m["cc"][W]["vs_cold"]["up"], m["cc"][W]["vs_cold"]["down"]) == (0, 1)
    diag = {(d["harness"], d["arm"], d["other"]): d for d in got["diagonal"]["heldout"]}
    assert set(diag) == {(W, "wb", "cc"), (C, "cc", "wb")}
    on_w = diag[(W, "wb", "cc")]
    assert on_w["difference"] == pytest.approx(2 / 3)
    assert (on_w["lo"], on_w["hi"], on_w["excludes_zero"]) == (0.5, 1.0, True)
    assert diag[(C, "cc", "wb")]["difference"] == pytest.approx(0.5)


def test_pooled_needs_the_same_tasks_in_every_replicate() -> None:
    a, b = outcomes("cold-start"), outcomes("wb-s0")
    assert pooled([(a, b)])["difference"] == pytest.approx(1 / 6)  # (1/3 on W + 0 on C) / 2 per task
    with pytest.raises(ValueError, match="same tasks"):
        pooled([(a, b), (a[:1] + a[3:4], b[:1] + b[3:4])])
    with pytest.raises(ValueError, match="no replicates"):
        pooled([])


def summary_of(got: dict) -> dict:
    for row in got["matrix"]["heldout"].values():  # a third harness, no outcomes: shown as "-"
        row.setdefault("whitebox:21220", {"pass1": None, "per_seed": [], "n": 0})
    return {
        "date": "2026-12-02",
        "arms": {"wb": [W], "cc": [C]},
        "seeds": [0, 1],
        "eval_harnesses": [W, C, "whitebox:21220"],
        "groups": {"heldout": ["t0", "t1", "t2"]},
        "budget": {"steps": 6, "tasks_per_step": 6, "group_size": 4},
        "eval_runs": 1,
        "seconds": {"tasks": 1.0, "sft": 60.0},
    } | got


def test_markdown_names_the_cells_the_unseen_harness_and_the_diagonal() -> None:
    md = table_markdown(summary_of(tables()))
    assert "| policy | whitebox:00000 | claude-code | whitebox:21220 * |" in md
    assert "| wb | 0.833 (+0.500 [" in md
    assert "| cold-start | 0.333 | 0.000 | - |" in md
    assert "| whitebox:00000 | wb | cc | +0.667 [+0.500, +1.000] (excludes 0) | 3 / 0 |" in md


def test_report_draws_the_heat_map(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from harnessrl.report.page import write_report

    (tmp_path / "transfer.json").write_text(json.dumps(summary_of(tables())))
    page = write_report(tmp_path).read_text(encoding="utf-8")
    assert (tmp_path / "plots" / "transfer-heldout.png").stat().st_size > 1000
    assert "Harness transfer" in page and "data:image/png;base64," in page
    assert "+0.667 [+0.500, +1.000]" in page  # the diagonal table beside the map


def test_report_says_what_is_wrong_with_a_broken_transfer_json(tmp_path: Path) -> None:
    from harnessrl.report.page import write_report

    (tmp_path / "transfer.json").write_text('{"matrix": [1, 2')
    page = write_report(tmp_path).read_text(encoding="utf-8")
    assert "transfer.json: not JSON" in page and "cannot be read" in page
    broken = summary_of(tables())
    del broken["matrix"]["heldout"]["wb"]["claude-code"]
    (tmp_path / "transfer.json").write_text(json.dumps(broken))
    page = write_report(tmp_path).read_text(encoding="utf-8")
    assert "matrix.heldout.wb lacks a cell per evaluation harness" in page


@pytest.mark.slow
@pytest.mark.harness
@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")
async def test_claude_code_recipe_end_to_end_and_reuse(tmp_path: Path) -> None:
    """Demonstrations through the real Claude Code (`--bare`), SFT, GRPO through it, evaluation
    through it and a white-box harness, on a toy budget with the tiny Qwen3 model."""
    overrides = [
        *toy_tasks("transfer", tmp_path / "tr", train=2, heldout=1),
        'transfer.arms={cc = ["claude-code"]}',
        'transfer.eval_harnesses=["claude-code", "whitebox:00000"]',
        "transfer.seeds=[0]",
        "transfer.rl_per_family=1",
        "transfer.heldout_family=1",
        "transfer.base_model_row=false",
        *ONE_STEP_EACH,
        "train.harness_options.claude-code.max_turns=2",
        "eval.harness_options.claude-code.max_turns=2",
        "eval.harness_options.whitebox.max_steps=2",
    ]
    first, lines = await run_echoed(run_transfer, TRANSFER_CONFIG, overrides)
    assert any("claude-code: 2/2 demonstrations solved" in line for line in lines), lines
    assert first["sft"]["solved"] == {C: [2, 2]}
    out = tmp_path / "tr"
    ran = {
        json.loads(f.read_text())["harness"] for f in (out / "arm-cc-s0" / "rollouts").rglob("rollout.json")
    }
    assert ran == {C}
    rl_ids = {
        json.loads(f.read_text())["task_id"] for f in (out / "arm-cc-s0" / "rollouts").rglob("rollout.json")
    }
    assert rl_ids == {"task_create_file_train_s0_0002"}  # RL on a task the cold start never saw
    calls = [
        json.loads(line) for f in (out / "arm-cc-s0" / "rollouts").rglob("calls.jsonl") for line in f.open()
    ]
    assert calls and all(c["dialect"] == "anthropic" for c in calls)
    assert [t.split("_heldout_")[1][:5] for t in first["groups"]["heldout"]] == ["s2026"]  # evaluate.heldout
    matrix = first["matrix"]
    assert set(matrix) == {"heldout", "heldout_family"}
    assert list(matrix["heldout"]) == ["cold-start", "cc"]
    assert matrix["heldout"]["cc"][C]["n"] == 1 and "vs_cold" in matrix["heldout"]["cc"][C]
    assert "| cc |" in (out / "transfer.md").read_text()
    # how a step is computed (attention implementation, micro-batch size) is not a stage input
    how = ['train.trainer.attention="sdpa"', "train.trainer.token_budget=1024"]
    second, lines = await run_echoed(run_transfer, TRANSFER_CONFIG, [*overrides, *how])
    assert second["matrix"] == first["matrix"]
    assert second["seconds"] == first["seconds"] and all(
        v > 0 for k, v in first["seconds"].items() if k != "tasks"
    )
    assert sum(1 for line in lines if "reused" in line) == 5  # tasks, sft, eval/cold-start, arm, eval
