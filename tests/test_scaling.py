"""Harness scaling, pure parts: the factor space, the strength-2 array (checked exactly), the held-out
split, baseline designs, K-pairing (uniform anchors by chi-square, nearest partners, the three modes)
and the schedule's harness-space assignment (groups per (task, configuration), resume-determinism)."""

from __future__ import annotations

from collections import Counter
from itertools import combinations

import pytest

from harnessrl.config import ConfigError, HarnessSpaceConfig, load_config
from harnessrl.scaling import (
    FACTORS,
    all_codes,
    design_codes,
    eval_codes,
    hamming,
    held_out,
    is_strength2,
    orthogonal_array,
    pair_codes,
)
from harnessrl.train.schedule import ScheduleSpec, SpaceSpec, schedule_step
from harnessrl.types import Task

CHI2_CRIT_17_DOF_P001 = 40.79
"""Chi-square critical value, 17 degrees of freedom, p = 0.001."""


def test_space_and_hamming() -> None:
    codes = all_codes()
    assert len(codes) == 243 == len(set(codes)) and codes[0] == "00000" and codes[-1] == "22222"
    assert (
        hamming("01220", "01220") == 0 and hamming("00000", "22222") == 5 and hamming("01220", "01221") == 1
    )
    with pytest.raises(ValueError):
        hamming("0122", "01220")


def test_orthogonal_array_is_strength_two_exactly() -> None:
    oa = list(orthogonal_array())
    assert len(oa) == 18 == len(set(oa))
    for i, j in combinations(range(5), 2):
        pairs = Counter((r[i], r[j]) for r in oa)
        assert pairs == {(a, b): 2 for a in "012" for b in "012"}, (i, j)
    assert is_strength2(oa)
    assert not is_strength2([*oa[:-1], "00000"])  # one changed run breaks it
    assert not is_strength2(design_codes("random-18", 0))


def test_held_out_split_and_eval_set() -> None:
    train = set(orthogonal_array())
    rest = held_out()
    assert len(rest) == 225 and train.isdisjoint(rest) and train | set(rest) == set(all_codes())
    ev = eval_codes(0)
    assert len(ev) == 18 == len(set(ev)) and set(ev) <= set(rest) and ev == eval_codes(0)
    assert eval_codes(1) != ev


def test_baseline_designs() -> None:
    assert design_codes("single") == ["00000"] and design_codes("single", single="01220") == ["01220"]
    first = design_codes("first-order")
    assert first == ["00000", "11111", "22222"]
    for f in range(5):  # each level of each factor exactly once
        assert sorted(c[f] for c in first) == ["0", "1", "2"]
    rnd = design_codes("random-18", 7)
    assert len(set(rnd)) == 18 and rnd == design_codes("random-18", 7) != design_codes("random-18", 8)
    assert design_codes("oa-18") == list(orthogonal_array()) and len(design_codes("all-243")) == 243
    with pytest.raises(ValueError, match="unknown design"):
        design_codes("oa-27")


def test_factor_levels_match_the_harness_program() -> None:
    from harnessrl.harnesses.whitebox.agent.agent_loop import FACTORS as PROGRAM

    assert tuple(levels for _, levels in FACTORS) == PROGRAM


def test_anchors_are_uniform() -> None:
    oa = list(orthogonal_array())
    n = 18 * 400
    counts = Counter(pair_codes(oa, 2, "nearest", 0, f"task{i}")[0] for i in range(n))
    expected = n / 18
    chi2 = sum((counts[c] - expected) ** 2 / expected for c in oa)
    assert set(counts) == set(oa) and chi2 < CHI2_CRIT_17_DOF_P001, chi2


def test_nearest_partners_are_nearest_neighbours_with_seeded_ties() -> None:
    oa = list(orthogonal_array())
    ties: Counter[str] = Counter()
    for i in range(300):
        codes = pair_codes(oa, 4, "nearest", 3, f"t{i}")
        anchor, partners = codes[0], codes[1:]
        assert len(set(codes)) == 4 and anchor not in partners
        dist = sorted(hamming(anchor, c) for c in oa if c != anchor)
        assert sorted(hamming(anchor, c) for c in partners) == dist[:3]
        if anchor == "00000":
            ties[codes[1]] += 1
        assert codes == pair_codes(oa, 4, "nearest", 3, f"t{i}")  # pure in (seed, task)
    near = [c for c in oa if hamming("00000", c) == min(hamming("00000", x) for x in oa if x != "00000")]
    assert len(near) > 1 and len(ties) > 1 and set(ties) <= set(near)  # ties broken by the seed, not fixed


def test_repeat_and_random_modes_and_errors() -> None:
    oa = list(orthogonal_array())
    rep = pair_codes(oa, 2, "repeat", 0, "t")
    assert rep == [rep[0], rep[0]] and rep[0] == pair_codes(oa, 2, "nearest", 0, "t")[0]
    seen = set()
    for i in range(200):
        rnd = pair_codes(oa, 2, "random", 0, f"t{i}")
        assert len(set(rnd)) == 2 and set(rnd) <= set(oa)
        seen.add(hamming(*rnd))
    assert max(seen) > 3  # random partners are not restricted to the nearest ones
    assert pair_codes(["00000"], 2, "repeat", 0, "t") == ["00000", "00000"]
    with pytest.raises(ValueError, match="needs at least 2"):
        pair_codes(["00000"], 2, "nearest", 0, "t")
    with pytest.raises(ValueError, match="unknown pairing"):
        pair_codes(oa, 2, "farthest", 0, "t")


TASKS = [Task(id=f"t{i}", prompt=f"task {i}") for i in range(5)]


def test_schedule_visits_k_configurations_on_consecutive_occasions() -> None:
    oa = tuple(orthogonal_array())
    space = SpaceSpec(codes=oa, k=2, pairing="nearest", seed=0, options={"max_steps": 5})
    spec = ScheduleSpec(harnesses=(), tasks_per_step=5, group_size=3, seed=0, space=space)
    per_task: dict[str, list[str]] = {}
    for step in range(4):  # 5 tasks per step = one epoch per step: occasion == step
        jobs = schedule_step(TASKS, spec, step)
        assert len(jobs) == 15 and all(j.options == {"max_steps": 5} for j in jobs)
        groups = Counter(j.group_id for j in jobs)
        assert all(n == 3 for n in groups.values()) and len(groups) == 5
        for j in jobs:
            assert j.group_id == f"{j.task.id}/{j.harness}" and j.harness.startswith("whitebox:")
        for j in jobs[::3]:
            per_task.setdefault(j.task.id, []).append(j.harness.removeprefix("whitebox:"))
        assert jobs == schedule_step(TASKS, spec, step)  # resume redoes the same assignment
    for task_id, visits in per_task.items():
        pair = pair_codes(oa, 2, "nearest", 0, task_id)
        assert visits == [pair[0], pair[1], pair[0], pair[1]]


def test_schedule_k1_is_one_configuration_per_task() -> None:
    space = SpaceSpec(codes=tuple(orthogonal_array()), k=1)
    spec = ScheduleSpec(harnesses=(), tasks_per_step=5, group_size=1, space=space)
    harness_of: dict[str, set[str]] = {}
    for step in range(3):
        for j in schedule_step(TASKS, spec, step):
            harness_of.setdefault(j.task.id, set()).add(j.harness)
    assert all(len(h) == 1 for h in harness_of.values())


def test_harness_space_config(tmp_path) -> None:
    from harnessrl.train.build import schedule_spec

    path = tmp_path / "c.toml"
    path.write_text('[train.harness_space]\ndesign = "first-order"\nk = 2\npairing = "repeat"\n')
    cfg = load_config(path)
    assert cfg.train.harness_space == HarnessSpaceConfig(design="first-order", k=2, pairing="repeat")
    spec = schedule_spec(cfg)
    assert spec.space is not None and spec.space.codes == ("00000", "11111", "22222")
    assert spec.harnesses == ()
    bad = load_config(path, ['train.harness_space.design="single"', 'train.harness_space.pairing="nearest"'])
    with pytest.raises(ConfigError, match="needs at least 2"):
        schedule_spec(bad)
    with pytest.raises(ConfigError, match="not both"):
        schedule_spec(load_config(path, ['train.harnesses=["codex"]']))


def test_scaling_configs_load() -> None:
    from pathlib import Path

    from harnessrl.train.build import schedule_spec

    folder = Path(__file__).parents[1] / "configs" / "scaling"
    files = sorted(folder.glob("*.toml")) + sorted(folder.glob("gpu/*.toml"))
    assert len(files) == 11  # the ablation arms, ablation.toml, the GPU config
    for f in files:
        spec = schedule_spec(load_config(f))
        assert spec.space is not None, f
