"""`harnessrl train` from the command line: flag plumbing and task selection in-process (fast), and the
demo configuration end to end with SmolLM2-135M and Claude Code in a subprocess (slow, harness)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from harness_solve import train_two_steps
from typer.testing import CliRunner

from harnessrl.cli import app
from harnessrl.commands.train import DEMO_CONFIG, select_tasks, train_config
from harnessrl.config import load_config, shipped_config

ROOT = Path(__file__).resolve().parents[1]
needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")

CURL = (
    'curl -sf -X POST "$HARNESSRL_BASE_URL/v1/chat/completions" -H "content-type: application/json" '
    '-H "authorization: Bearer $HARNESSRL_API_KEY" '
    '-d \'{"model":"m","max_tokens":4,"messages":[{"role":"user","content":"hi"}]}\' > /dev/null'
)


def test_no_config_means_the_demo_file() -> None:
    assert shipped_config(DEMO_CONFIG).resolve() == (ROOT / "configs" / "demo.toml").resolve()
    demo = train_config(None, [])
    assert demo == load_config(ROOT / "configs" / "demo.toml")
    assert (demo.engine.type, demo.engine.model, demo.rollout.harness) == ("hf", "default", "claude-code")
    assert demo.train.harness_options == {"claude-code": {"bare": True}}
    assert (demo.train.steps, demo.train.tasks_per_step, demo.train.group_size) == (2, 2, 2)
    tasks = select_tasks(demo)
    assert len(tasks) == 7 and {t.category for t in tasks} == {"warmup"}
    assert {t.split for t in tasks} == {"train"}


def test_flags_become_overrides_and_overrides_win() -> None:
    cfg = train_config(
        None,
        ["train.steps=9", "tasks.limit=3"],
        **{"train.steps": 4, "train.harnesses": ["codex"], "train.resume": True, "tasks.path": "bundled"},
    )
    assert (cfg.train.steps, cfg.train.harnesses, cfg.train.resume) == (9, ["codex"], True)
    assert [t.id for t in select_tasks(cfg)] == ["task_0000", "task_0001", "task_0002"]


@needs_bwrap
def test_cli_runs_a_step_through_the_shell_harness(tmp_path: Path) -> None:
    out = tmp_path / "run"
    args = [
        "train",
        "--steps",
        "1",
        "--harness",
        "shell",
        "--category",
        "warmup",
        "-o",
        "engine.model=tiny-qwen3",
        "-o",
        "engine.sampling.max_tokens=4",
        "-o",
        f"train.out_dir={json.dumps(str(out))}",
        "-o",
        f"train.harness_options.shell.command={json.dumps(CURL)}",
        "-o",
        "train.tasks_per_step=1",
        "-o",
        'train.algorithm="grpo"',
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    rec = json.loads((out / "metrics.jsonl").read_text())
    # Doing nothing scores the same for both rollouts of the group: a GRPO step with nothing to learn.
    assert rec["status"] == {"ok": 2} and rec["trained"] is False and rec["skip_reason"] == "zero_advantage"
    assert rec["groups"] == {
        "scheduled": 1, "trained": 1, "zero_variance": 1, "dropped_small": 0,
        "informative": 0, "resampled": 0, "rounds": 0, "exhausted": 0, "dropped_zero_variance": 0,
    }  # fmt: skip
    assert rec["tree"]["calls"] == 2
    assert "step 1/1 | ok 2 | reward " in result.output and "skipped (zero_advantage)" in result.output


def test_cli_reports_a_bad_override() -> None:
    result = CliRunner().invoke(app, ["train", "-o", "train.group_size=0"])
    assert result.exit_code == 2
    assert "train.group_size" in result.output


@pytest.mark.slow
@pytest.mark.timeout(1800)  # 1,063 s alone at load 8-12 on two cores
@pytest.mark.harness
@needs_bwrap
def test_demo_runs_two_real_steps(tmp_path: Path) -> None:
    """The README's main command, on the real model through Claude Code --bare (minutes on 2 cores)."""
    out = tmp_path / "demo"
    records = train_two_steps(out)
    trained = [r for r in records if r["trained"]]
    assert trained, [r["status"] for r in records]
    for r in trained:
        assert r["trainer"]["trained_tokens"] > 0
        if r["reward"]["max"]:  # PPO's advantage R - V is all zero when every reward and V are 0
            assert r["trainer"]["grad_norm"] > 0
        assert r["trainer"]["mismatch/abs_max"] < 1e-3
    assert records[-1]["optimizer_step"] == len(trained)
    assert (out / "checkpoints").is_dir()
