"""The harness-scaling ablation (`harnessrl.experiments.ablation`, `scripts/scaling_ablation`): the arms'
designs, the evaluation configurations (held out from every arm and the cold start), the table, and
(slow) every stage end to end on a toy scale with reuse."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from toy_scale import ONE_STEP_EACH, run_echoed, toy_tasks

from harnessrl.commands.ablation import ABLATION_CONFIG as ABLATION_NAME
from harnessrl.config import ConfigError, load_config, shipped_config
from harnessrl.experiments.ablation import (
    arm_space,
    cell,
    eval_configs,
    run_ablation,
    table_rows,
)
from harnessrl.scaling import design_codes, harness_name, orthogonal_array

REPO = Path(__file__).resolve().parents[1]
ABLATION_CONFIG = shipped_config(ABLATION_NAME)


def test_config_is_the_repository_one_and_loads() -> None:
    assert ABLATION_CONFIG.resolve() == (REPO / "configs" / "scaling" / "ablation.toml").resolve()
    cfg = load_config(ABLATION_CONFIG, [])
    assert cfg.ablation.arms == ["single", "random-18", "oa-18"]
    assert (REPO / "scripts" / "scaling_ablation").stat().st_mode & 0o111


def test_arm_space_keeps_k_and_pairing_and_single_repeats() -> None:
    cfg = load_config(ABLATION_CONFIG, [])
    oa = arm_space(cfg, "oa-18")
    assert (oa.design, oa.k, oa.pairing) == ("oa-18", 2, "nearest")
    single = arm_space(cfg, "single")
    assert (single.design, single.k, single.pairing) == ("single", 2, "repeat")
    with pytest.raises(ConfigError, match="unknown design 'oa-19'"):
        arm_space(cfg, "oa-19")


def test_eval_configs_are_outside_every_arm_and_the_cold_start() -> None:
    cfg = load_config(ABLATION_CONFIG, [])
    codes = eval_configs(cfg)
    assert len(codes) == 18 == len(set(codes)) and codes == sorted(codes)
    seen = set(orthogonal_array()) | set(design_codes("random-18", 0)) | {"00000", "11100", "22200"}
    assert not seen & set(codes)
    assert eval_configs(cfg) == codes  # seeded
    assert eval_configs(load_config(ABLATION_CONFIG, ["eval.seed=1"])) != codes
    with pytest.raises(ConfigError, match="only 225 codes"):
        eval_configs(load_config(ABLATION_CONFIG, ['ablation.arms=["oa-18"]', "ablation.sft_codes=[]",
                                                   "ablation.eval_configs=226"]))  # fmt: skip


def test_table_cells_show_both_standard_errors_and_missing_groups() -> None:
    one_run = {"pass1": 0.25, "se_pairs": 0.1, "se": None}
    assert cell(one_run) == "0.250 +- 0.100"
    assert cell({"pass1": 0.5, "se_pairs": 0.1, "se": 0.02}) == "0.500 +- 0.100 (runs +- 0.020)"
    assert cell({}) == "-"
    results = {"arm": {"space": {"in_space_heldout": one_run | {"mean_score": 0.5, "pairs": 4}},
                       "summary": {"statuses": {"ok": 4}}}}  # fmt: skip
    assert table_rows(results) == [["arm", "0.250 +- 0.100", "0.500", "4", "-", "-", "0", "ok 4"]]


def fake_run(out: Path, configs: list[str], passed: dict[str, list[int]]) -> Path:
    """An ablation run folder with hand-made outcomes: `passed[policy]` gives, per in-space pair
    (2 tasks x the configs, in order), 1 or 0; plus one out-of-space rollout per task, failed."""
    pairs = [(f"t{t}", harness_name(c)) for t in range(2) for c in configs]
    (out / "eval").mkdir(parents=True)
    summary = {"policies": {p: {} for p in passed}, "eval_configs": configs, "out_of_space": ["codex"]}
    (out / "ablation.json").write_text(json.dumps(summary))
    for policy, bits in passed.items():
        outcomes = [
            {
                "task_id": t,
                "harness": h,
                "run": 0,
                "passed": bool(b),
                "status": "ok" if b else "harness_error",
            }
            for (t, h), b in zip(pairs, bits, strict=True)
        ]
        outcomes += [{"task_id": f"t{t}", "harness": "codex", "run": 0, "passed": False} for t in range(2)]
        (out / "eval" / policy).mkdir()
        (out / "eval" / policy / "eval.json").write_text(json.dumps({"outcomes": outcomes}))
    return out


def test_seeds_combine_paired_within_each_run(tmp_path: Path) -> None:
    """Each run has its own evaluation configurations; differences are paired within a run, then
    averaged over runs (se over runs) and pooled over all pairs (se over pairs)."""
    from harnessrl.experiments.ablation_seeds import combine, combined_markdown

    one = fake_run(tmp_path / "s0", ["00100", "00200"], {"cold-start": [0, 1, 0, 0], "oa-18": [1, 1, 0, 1]})
    two = fake_run(tmp_path / "s1", ["10100", "20200"], {"cold-start": [1, 1, 0, 0], "oa-18": [1, 1, 0, 0]})
    got = combine([one, two])["in_space_heldout"]
    oa = got["oa-18"]
    assert [r["pass1"] for r in oa["runs"]] == [0.75, 0.5]
    assert [r["diff"] for r in oa["runs"]] == [0.5, 0.0]
    assert oa["runs"][0]["diff_se"] == pytest.approx(0.288675, abs=1e-6)  # sd of [1, 0, 0, 1] / 2
    assert (oa["pass1"], oa["diff"], oa["pairs"]) == (0.625, 0.25, 8)
    assert oa["diff_se"] == pytest.approx(0.25)  # sd of [0.5, 0.0] / sqrt(2)
    assert oa["pooled_diff"] == 0.25
    assert oa["pooled_diff_se"] == pytest.approx(0.163663, abs=1e-6)  # sd of [1,0,0,1,0,0,0,0] / sqrt(8)
    assert got["cold-start"]["diff"] == 0.0
    assert combine([one, two], reference="oa-18")["in_space_heldout"]["cold-start"]["diff"] == -0.25
    out_of_space = combine([one, two])["out_of_space"]["oa-18"]
    assert (out_of_space["pass1"], out_of_space["pairs"]) == (0.0, 4)
    table = combined_markdown([one, two], combine([one, two]), "cold-start")
    assert "| oa-18 | 0.750 (+0.500 +- 0.289) | 0.500 (+0.000 +- 0.000) | 0.625 +- 0.125 |" in table
    with pytest.raises(ValueError, match="reference policy 'random-18' is not in every run"):
        combine([one, two], reference="random-18")
    with pytest.raises(ValueError, match=r"no readable ablation\.json"):
        combine([tmp_path / "missing"])


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")
async def test_ablation_toy_scale_and_reuse(tmp_path: Path) -> None:
    overrides = [
        *toy_tasks("ablation", tmp_path / "ab", train=2, heldout=1),
        'ablation.arms=["single", "first-order"]',
        'ablation.sft_codes=["00000", "22200"]',
        "ablation.eval_configs=2",
        "ablation.out_of_space=[]",
        *ONE_STEP_EACH,
        "train.harness_space.options.max_steps=2",  # the demonstrations: the command, then "done"
        "eval.harness_options.whitebox.max_steps=2",
    ]
    first, lines = await run_echoed(run_ablation, ABLATION_CONFIG, overrides)
    assert list(first["policies"]) == ["cold-start", "single", "first-order"]
    assert any("whitebox:22200: 2/2 demonstrations" in line for line in lines), lines
    for r in first["policies"].values():
        assert r["space"]["in_space_heldout"]["pairs"] == 2 and "out_of_space" not in r["space"]
    assert set(first["seconds"]) == {
        "tasks",
        "sft",
        "eval/cold-start",
        "arm-single",
        "eval/single",
        "arm-first-order",
        "eval/first-order",
    }
    ran = {
        json.loads(f.read_text())["harness"]
        for f in (tmp_path / "ab" / "arm-single" / "rollouts").rglob("rollout.json")
    }
    assert ran == {"whitebox:00000"}  # the single design trains on its one configuration
    assert (tmp_path / "ab" / "ablation.md").read_text().count("| first-order |") == 1
    second, lines = await run_echoed(run_ablation, ABLATION_CONFIG, overrides)
    assert second["policies"] == first["policies"]
    assert sum(1 for line in lines if "reused" in line) == 7
