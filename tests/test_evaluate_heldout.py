"""The fresh held-out set (`evaluate.heldout`): 10 distinct instances per family from a seed never
trained with, none of them a task of the quickstart's sets, written as a loadable task set."""

from __future__ import annotations

import hashlib
from collections import Counter
from pathlib import Path

import pytest

from harnessrl.evaluate.heldout import excluded, heldout_set, identity, main, pick
from harnessrl.tasks import load_tasks
from harnessrl.tasks.generate import TASK_FAMILIES, TRAIN_FAMILIES, instances, is_held_out_instance


def digest(root: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        if p.is_file():
            h.update(str(p.relative_to(root)).encode() + b"\0" + p.read_bytes())
    return h.hexdigest()


def test_the_plain_stream_repeats_itself_which_is_why_this_exists() -> None:
    first = instances("code_fix", "heldout", 24, 10)
    assert len({identity(i) for i in first}) == 6
    assert len({identity(i) for i in first} & excluded("code_fix")) == 2  # the quickstart's own tasks


def test_seventy_fresh_distinct_tasks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main([str(tmp_path / "a"), "--seed", "24"])
    assert capsys.readouterr().out.splitlines() == [
        f"60 task(s) in {tmp_path / 'a' / 'heldout_instances'}",
        f"10 task(s) in {tmp_path / 'a' / 'heldout_family'}",
    ]
    loaded = load_tasks(tmp_path / "a")
    assert loaded.rejected == []
    counts = Counter((t.split, t.category) for t in loaded.tasks)
    assert counts == Counter(
        {("heldout_instances", f): 10 for f in TRAIN_FAMILIES} | {("heldout_family", "json_field"): 10}
    )
    assert loaded.tasks[0].id.startswith("task_") and "_heldout_s24_" in loaded.tasks[0].id
    for family in TASK_FAMILIES:
        kept = pick(family, 24, 10)
        keys = [identity(i) for _, i in kept]
        assert len(set(keys)) == 10 and not set(keys) & excluded(family), family
        if family in TRAIN_FAMILIES:  # a held-out prompt never occurs in a train split
            assert all(is_held_out_instance(family, i) for _, i in kept)
            train = {i.prompt for i in instances(family, "train", 0, 8)}
            assert not {i.prompt for _, i in kept} & train
    heldout_set(tmp_path / "b", 24)  # a pure function of (seed, per_family): byte-identical folders
    assert digest(tmp_path / "a") == digest(tmp_path / "b")
    with pytest.raises(FileExistsError):
        heldout_set(tmp_path / "a", 24)


def test_refuses_a_training_seed_and_a_family_too_small(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="seed 0"):
        heldout_set(tmp_path, 0)
    with pytest.raises(ValueError, match=r"code_fix: only 13 fresh"):  # 16 held-out instances, 3 used
        pick("code_fix", 24, 14)


def test_a_subset_of_families_and_its_own_held_out_family_count(tmp_path: Path) -> None:
    heldout_set(tmp_path / "s", 24, 2, held_out_family=3, families=["create_file", "move_file"])
    counts = Counter((t.split, t.category) for t in load_tasks(tmp_path / "s").tasks)
    assert counts == Counter({("heldout_instances", "create_file"): 2, ("heldout_instances", "move_file"): 2,
                              ("heldout_family", "json_field"): 3})  # fmt: skip
    heldout_set(tmp_path / "n", 24, 1, held_out_family=0)
    assert not (tmp_path / "n" / "heldout_family").exists()
    with pytest.raises(ValueError, match="not train families: \\['json_field'\\]"):
        heldout_set(tmp_path / "x", 24, families=["json_field"])
