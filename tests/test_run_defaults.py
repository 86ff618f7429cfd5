"""Defaults that finish on the embedded CPU engine (`evaluate.defaults`): applied only where nothing
sets them, said in the run's first line, which a real `harnessrl eval` and `harnessrl rollout` print
within seconds (before the model loads)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harnessrl.config import load_config
from harnessrl.evaluate.defaults import (
    CPU_MAX_STEPS,
    CPU_MAX_TOKENS,
    STEPS_OPTION,
    applied_text,
    bounded_defaults,
)
from harnessrl.evaluate.run import harness_options
from harnessrl.harnesses.whitebox.adapter import OPTIONS

REPO = Path(__file__).resolve().parents[1]
W, W2 = "whitebox:00000", "whitebox:21220"


def test_the_defaults_apply_where_nothing_sets_them() -> None:
    assert (CPU_MAX_TOKENS, CPU_MAX_STEPS) == (128, 5) and STEPS_OPTION in OPTIONS
    cfg, applied = bounded_defaults(load_config(None, []), "eval", [W, "claude-code", W])
    assert applied == ["engine.sampling.max_tokens = 128", "max_steps = 5 for whitebox:00000"]
    assert cfg.engine.sampling.max_tokens == 128
    assert harness_options(cfg, W) == {"max_steps": 5} and harness_options(cfg, "claude-code") == {}
    assert applied_text(applied) == (
        "; defaults for the embedded CPU engine: engine.sampling.max_tokens = 128, max_steps = 5 for "
        "whitebox:00000 (set them to change)"
    )
    assert applied_text([]) == ""


def test_what_the_user_sets_wins_and_other_engines_keep_theirs() -> None:
    cfg = load_config(None, ["engine.sampling.max_tokens=4096", "eval.harness_options.whitebox.max_steps=30"])
    cfg2, applied = bounded_defaults(cfg, "eval", [W, W2])
    assert applied == [] and cfg2 == cfg
    # the family's options are kept when a step limit is added for the one harness
    cfg = load_config(None, ["eval.harness_options.whitebox.max_tokens=64", "engine.sampling.max_tokens=64"])
    cfg, applied = bounded_defaults(cfg, "eval", [W])
    assert applied == ["max_steps = 5 for whitebox:00000"]
    assert harness_options(cfg, W) == {"max_tokens": 64, "max_steps": 5}
    for engine in (["engine.type=scripted"], ["engine.device=cuda"], ["engine.type=vllm"]):
        cfg = load_config(None, engine)
        assert bounded_defaults(cfg, "eval", [W]) == (cfg, [])


def test_rollout_and_train_bound_their_own_options() -> None:
    cfg = load_config(None, [f'rollout.harness="{W}"', "rollout.harness_options.whitebox:00000.x=1"])
    cfg, applied = bounded_defaults(cfg, "rollout", [W])
    assert cfg.rollout.harness_options == {W: {"x": 1, "max_steps": 5}}
    assert applied[1:] == ["max_steps = 5 for whitebox:00000"]
    cfg = load_config(
        None, ['train.harness_space={design = "oa-18"}', f"train.harness_options.{W2}.max_steps=2"]
    )
    cfg, applied = bounded_defaults(cfg, "train", [W2])
    assert cfg.train.harness_options == {W2: {"max_steps": 2}}
    assert cfg.train.harness_space is not None and cfg.train.harness_space.options == {"max_steps": 5}
    assert applied[1:] == ["max_steps = 5 for the harness space (oa-18)"]


def first_line(args: list[str], cwd: Path, timeout_s: float = 120.0) -> tuple[str, float]:
    """The first line a real `harnessrl` prints on a pipe, and the seconds it took; the process is
    stopped there (its model load and rollouts are not what this measures)."""
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"), OMP_NUM_THREADS="1")
    argv = [sys.executable, "-c", "from harnessrl.cli import app; app()", *args]
    t0 = time.monotonic()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=cwd,
                            env=env, start_new_session=True)  # fmt: skip
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        return line.rstrip("\n"), time.monotonic() - t0
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=timeout_s)


def test_eval_says_what_runs_and_which_defaults_applied_first(tmp_path: Path) -> None:
    """The command of issue 36 (it printed nothing for 15 minutes): its first line comes before the
    model loads (seconds; most of it is importing the package on a loaded machine)."""
    args = ["eval", "--limit", "2", "--harness", W, "--runs", "1", "--checkpoint", "a=default"]
    args += ["--checkpoint", "b=default", "--out", str(tmp_path / "ev")]
    line, seconds = first_line(args, tmp_path)
    assert line == (
        f"eval: 2 task(s) x 1 harness(es) x 1 run(s) x 2 policies = 4 rollouts -> {tmp_path / 'ev'}; "
        "defaults for the embedded CPU engine: engine.sampling.max_tokens = 128, max_steps = 5 for "
        "whitebox:00000 (set them to change)"
    )
    assert seconds < 60, seconds


def test_rollout_says_what_runs_first(tmp_path: Path) -> None:
    args = [
        "rollout",
        "--limit",
        "1",
        "--harness",
        W2,
        "--out",
        str(tmp_path / "r"),
        "-o",
        "engine.sampling.max_tokens=32",
    ]
    line, seconds = first_line(args, tmp_path)
    assert line == (
        f"rollout: 1 task(s) x 1 through {W2} = 1 rollout(s), 4 at once -> {tmp_path / 'r'}; defaults for "
        f"the embedded CPU engine: max_steps = 5 for {W2} (set them to change)"
    )
    assert seconds < 60, seconds


@pytest.mark.parametrize("cmd", [["tasks", "check", "bundled", "--split", "test", "-j", "2"]])
def test_tasks_check_says_what_it_checks_first(tmp_path: Path, cmd: list[str]) -> None:
    line, _ = first_line(cmd, tmp_path)
    assert line == "checking 10 task(s), 2 at once (sandboxed)"
