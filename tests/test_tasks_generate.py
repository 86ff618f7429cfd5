"""Procedural task families: every generated task loads, its checker separates untouched, reference
and wrong answers (through `verify.selfcheck`, real subprocesses), generation is byte-deterministic,
and the split holds out what it says."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from harnessrl.cli import app
from harnessrl.rollout.session import reference_command, reference_steps
from harnessrl.tasks import load_tasks
from harnessrl.tasks.clawgym_folder import STEPS_MARK
from harnessrl.tasks.generate import (
    HELD_OUT_FAMILIES,
    MULTI_STEP_FAMILIES,
    NAMED_TRAIN_FAMILIES,
    TASK_FAMILIES,
    TRAIN_FAMILIES,
    generate,
    instances,
    is_held_out_instance,
)
from harnessrl.verify.selfcheck import self_check

# family -> (untouched score, the metrics a wrong answer may lose)
EXPECT = {
    "count_matches": (0.25, {"count_correct"}),
    "csv_field": (0.25, {"value_correct"}),
    "move_file": (0.25, {"source_gone"}),
    "text_transform": (0.25, {"lines_correct", "line_count_correct"}),
    "code_fix": (2 / 3, {"other_function_correct"}),
    "create_file": (0.0, {"file_exists", "content_exact", "single_line"}),
    "json_field": (0.25, {"value_correct"}),
    "log_triage": (0.0, {"count_correct"}),
    "config_update": (0.0, {"backup_original"}),
}


def test_registry() -> None:
    assert list(TASK_FAMILIES) == list(EXPECT)
    assert TRAIN_FAMILIES == (
        "count_matches",
        "csv_field",
        "move_file",
        "text_transform",
        "code_fix",
        "create_file",
    )
    assert HELD_OUT_FAMILIES == ("json_field",)
    assert MULTI_STEP_FAMILIES == ("log_triage", "config_update")
    assert NAMED_TRAIN_FAMILIES == (*TRAIN_FAMILIES, *MULTI_STEP_FAMILIES)
    for name, fam in TASK_FAMILIES.items():
        assert fam.name == name and 3 <= len(fam.metrics) <= 5


@pytest.mark.parametrize("family", list(TASK_FAMILIES))
def test_family_checkers_separate_right_from_wrong(family: str, tmp_path: Path) -> None:
    for seed in (0, 1, 2):
        generate([family], 2, seed, tmp_path)
    load = load_tasks(tmp_path)
    assert load.rejected == []
    assert len(load.tasks) == 6
    untouched, may_lose = EXPECT[family]
    for task in load.tasks:
        assert task.category == family
        assert task.checker is not None and task.checker.shell_entry is None
        assert task.reference is not None and task.wrong_reference is not None
        result = self_check(task, timeout_s=30)
        assert result.untouched is not None and result.reference is not None and result.wrong is not None
        assert (result.untouched.score, result.untouched.error) == (pytest.approx(untouched), None), task.id
        assert (result.reference.score, result.reference_error) == (1.0, None), task.id
        assert set(result.reference.metrics.values()) == {1.0}
        assert result.wrong.error is None and result.wrong_error is None
        assert result.wrong_lost and set(result.wrong_lost) <= may_lose, (task.id, result.wrong_lost)
        assert result.ok


def test_prompts_are_short_and_answers_one_line() -> None:
    for family in TASK_FAMILIES:
        if family in MULTI_STEP_FAMILIES:
            continue
        for inst in instances(family, "train", 7, 30):
            assert len(inst.prompt) <= 100, inst.prompt
            assert inst.prompt.count(". ") <= 1
            assert "\n" not in inst.solve and "\n" not in inst.wrong


def test_multi_step_families_are_three_ordered_steps(tmp_path: Path) -> None:
    """A multi-step instance: a prompt naming three numbered steps, three reference commands (one per
    step, what the scripted engines send one per call) and a wrong sequence of three; its solve.sh is
    marked, so `reference_command` still runs it whole (as `bash -c`) and one-command families' are not."""
    for family in MULTI_STEP_FAMILIES:
        for inst in instances(family, "train", 7, 30):
            assert inst.prompt.startswith("Three steps: 1. ")
            assert " 2. " in inst.prompt and " 3. " in inst.prompt
            assert len(inst.prompt) <= 180, inst.prompt
            assert len(inst.solve.split("\n")) == 3 and len(inst.wrong.split("\n")) == 3
    generate(["log_triage", "create_file"], 1, 0, tmp_path)
    multi, single = sorted(load_tasks(tmp_path).tasks, key=lambda t: t.id != "task_log_triage_train_s0_0000")
    assert multi.reference is not None and multi.reference.source is not None
    assert multi.reference.source.read_text().splitlines()[:2] == ["#!/usr/bin/env bash", STEPS_MARK]
    assert reference_steps(multi) == [
        "mkdir -p audit",
        "grep -c ERROR logs/web.log > audit/count.txt",
        "mv logs/web.log audit/",
    ]
    assert reference_command(multi).startswith(f"bash -c '{STEPS_MARK}\nmkdir -p audit\n")
    one = "mkdir -p notes && echo 'quiet amber 40' > notes/label.txt"
    assert reference_steps(single) == [reference_command(single)] == [one]


def _tree(root: Path) -> dict[str, tuple[bytes, int]]:
    return {
        p.relative_to(root).as_posix(): (p.read_bytes(), p.stat().st_mode)
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_generation_is_byte_deterministic(tmp_path: Path) -> None:
    for out in ("a", "b"):
        generate(list(TASK_FAMILIES), 3, 11, tmp_path / out)
        generate(list(TRAIN_FAMILIES), 2, 11, tmp_path / out, split="heldout")
    a, b = _tree(tmp_path / "a"), _tree(tmp_path / "b")
    # 5 task files + 1 input each; move_file (5 tasks) and log_triage (3) have 2 inputs
    assert len(a) == (9 * 3 + 6 * 2) * 6 + 5 + 3
    assert a == b
    generate(list(TASK_FAMILIES), 3, 12, tmp_path / "c")
    c = _tree(tmp_path / "c")
    assert {k.replace("_s12_", "_s11_"): v[0] for k, v in c.items()} != {k: v[0] for k, v in a.items()}


def test_split_holds_out_prompts_and_a_family(tmp_path: Path) -> None:
    for family in TRAIN_FAMILIES:
        train = {i.prompt for i in instances(family, "train", 0, 40)}
        held = {i.prompt for i in instances(family, "heldout", 0, 5)}
        assert not train & held, family
        assert all(is_held_out_instance(family, i) for i in instances(family, "heldout", 3, 5))
    res = CliRunner().invoke(app, ["tasks", "generate", "--n", "1", "--seed", "4", str(tmp_path)])
    assert res.exit_code == 0, res.output
    res = CliRunner().invoke(app, ["tasks", "generate", "--split", "heldout", "--n", "1", str(tmp_path)])
    assert res.exit_code == 0, res.output
    res = CliRunner().invoke(app, ["tasks", "generate", "--family", "json_field", "--n", "2", str(tmp_path)])
    assert res.exit_code == 0, res.output
    assert res.output.splitlines() == [
        f"json_field: 2 task(s) in {tmp_path / 'heldout_family'}",
        f"wrote 2 task(s) under {tmp_path}",
    ]
    load = load_tasks(tmp_path)
    assert load.rejected == []
    by_split = {s: sorted(t.id for t in load.tasks if t.split == s) for s in {t.split for t in load.tasks}}
    assert by_split == {
        "train": sorted(f"task_{f}_train_s4_0000" for f in TRAIN_FAMILIES),
        "heldout_instances": sorted(f"task_{f}_heldout_s0_0000" for f in TRAIN_FAMILIES),
        "heldout_family": ["task_json_field_heldout_s0_0000", "task_json_field_heldout_s0_0001"],
    }
    res = CliRunner().invoke(app, ["tasks", "generate", "--family", "json_field", "--n", "2", str(tmp_path)])
    assert res.exit_code == 2
    assert (
        res.output
        == f"error: {tmp_path / 'heldout_family' / 'task_json_field_heldout_s0_0000'} already exists\n"
    )
    res = CliRunner().invoke(app, ["tasks", "generate", "--split", "test", str(tmp_path)])
    assert res.exit_code == 2
    assert res.output == "error: unknown split 'test' (expected one of ('train', 'heldout'))\n"


def test_generated_set_passes_sandboxed_tasks_check(tmp_path: Path) -> None:
    generate(list(TASK_FAMILIES), 1, 5, tmp_path)
    res = CliRunner().invoke(app, ["tasks", "check", str(tmp_path), "-j", "2"])
    assert res.exit_code == 0, res.output
    assert res.output.splitlines()[-2:] == ["9 task(s) loaded, 0 rejected", "9 ok, 0 failed (sandboxed)"]
