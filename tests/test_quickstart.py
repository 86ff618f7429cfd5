"""`harnessrl quickstart` end to end on a toy scale (tiny-qwen3 on the embedded engine, one family):
every stage runs, the table has the three policies, and a second run reuses every stage."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from toy_scale import run_echoed, toy_tasks

from harnessrl.commands.quickstart import QUICKSTART_CONFIG
from harnessrl.config import shipped_config
from harnessrl.experiments.quickstart import run_quickstart

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed"),
]
REPO = Path(__file__).resolve().parents[1]
QUICKSTART = shipped_config(QUICKSTART_CONFIG)


def test_packaged_config_is_the_repository_one() -> None:
    assert QUICKSTART.resolve() == (REPO / "configs" / "quickstart.toml").resolve()


async def test_quickstart_toy_scale_and_reuse(tmp_path: Path) -> None:
    overrides = [
        *toy_tasks("quickstart", tmp_path / "qs", train=3, heldout=2),
        'engine.model="tiny-qwen3"',
        "engine.sampling.max_tokens=64",  # the demonstrations must fit (the proxy cuts them too)
        "sft.steps=2",
        "sft.batch_size=2",
        "sft.heldout_every=0",
        "train.steps=1",
        "train.tasks_per_step=2",
        "train.group_size=2",
        "train.algorithm=ppo",
        "eval.harness_options.whitebox.max_steps=1",
        'train.harness_options."whitebox:00000".max_steps=1',
    ]
    first, lines = await run_echoed(run_quickstart, QUICKSTART, overrides)
    assert list(first["policies"]) == ["base", "sft", "sft+rl"]
    for s in first["policies"].values():
        assert s["pairs"] == 2 and s["rollouts"] == 6 and len(s["per_run"]) == 3
    assert set(first["seconds"]) == {"tasks", "sft", "eval/base", "eval/sft", "rl", "eval/sft+rl"}
    assert (tmp_path / "qs" / "quickstart.md").read_text().count("| sft") == 2
    # paired differences over the row above, from the stages' eval.json (2 tasks, same seeds)
    paired = first["paired"]
    assert [(p, c["baseline"], c["tasks"]) for p, c in paired.items()] == [
        ("sft", "base", 2),
        ("sft+rl", "sft", 2),
    ]
    for p, c in paired.items():
        diff = first["policies"][p]["pass1"] - first["policies"][c["baseline"]]["pass1"]
        assert c["difference"] == pytest.approx(diff) and c["lo"] <= c["difference"] <= c["hi"]
    assert "\nsft+rl over sft: " in (tmp_path / "qs" / "quickstart.md").read_text()
    assert any((tmp_path / "qs" / "tb").iterdir())  # the table, also as TensorBoard text
    assert (tmp_path / "qs" / "eval" / "sft+rl" / "eval.md").is_file()
    second, lines = await run_echoed(run_quickstart, QUICKSTART, overrides)
    assert second["policies"] == first["policies"]
    assert sum(1 for line in lines if "reused" in line) == 6 and set(second["seconds"].values()) == {0.0}
