"""`harnessrl rollout` as a real subprocess (stdout a pipe, not a terminal) on the ClawGym-layout
example: `--option` reaches the harness adapter, a progress line per finished rollout, exit status 1
when no rollout ended ok. The `shell` harness with the scripted engine, in real sandboxes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harnessrl.commands.rollout import reward_shown, with_options
from harnessrl.config import TRAINABLE_STATUSES, load_config
from harnessrl.types import Rollout, RolloutStatus

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")

REPO = Path(__file__).resolve().parents[1]
HARNESSRL = str(Path(sys.executable).parent / "harnessrl")
SPLIT = REPO / "tests" / "fixtures" / "clawgym-format" / "example_split"
SOLVE = 'mkdir -p build && printf \'["Ada", "Linus"]\' > build/overdue.json'


def rollout(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(REPO / "src"))
    cmd = [HARNESSRL, "rollout", "--tasks", str(SPLIT), "--harness", "shell", "--engine", "scripted"]
    cmd += ["--model", "tiny-qwen3", "--out", str(tmp_path / "out"), *args]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)


def test_option_reaches_the_adapter_and_progress_lines_are_printed(tmp_path: Path) -> None:
    proc = rollout(tmp_path, "--option", f"command={json.dumps(SOLVE)}", "--n", "2")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    lines = [line for line in proc.stdout.splitlines() if line.startswith("[")]
    assert [line.split(" ")[0] for line in lines] == ["[1/2]", "[2/2]"]
    ids = sorted(line.split(" ")[1] for line in lines)
    assert ids == ["task_0000-shell-0", "task_0000-shell-1"]
    shown = proc.stdout[-2000:] + proc.stderr[-2000:]
    assert all(" ok reward 1.000 calls 0 " in line for line in lines), shown
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["status"] == {"ok": 2} and summary["mean_reward_ok"] == 1.0


def test_exit_status_is_1_when_no_rollout_succeeded(tmp_path: Path) -> None:
    proc = rollout(tmp_path, "-o", 'rollout.harness_options.shell.command="exit 7"')
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-2000:]
    # it failed before talking to the model: the infrastructure's, not trained (the checker's 0 labelled)
    assert "[1/1] task_0000-shell-0 harness_error reward - (checker 0.000) calls 0 " in proc.stdout
    assert "harness failed (exit code 7)" in proc.stdout
    assert "error: none of the 1 rollouts ended ok" in proc.stdout


def test_options_the_harness_cannot_take_fail_before_anything_runs(tmp_path: Path) -> None:
    proc = rollout(tmp_path)  # the shell harness without --option command=
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert proc.stdout == (
        "error: shell: cannot configure: the shell harness needs options['command'] (a shell command line)\n"
    )
    assert not (tmp_path / "out").exists()  # no rollout folder, sandbox or checker


def test_the_reward_shown_is_the_one_training_uses() -> None:
    def shown(status: RolloutStatus, fault: str, reward: float | None) -> str:
        r = Rollout(rollout_id="r", task_id="t", harness="h", status=status, fault=fault, reward=reward)
        return reward_shown(r, TRAINABLE_STATUSES)

    assert shown(RolloutStatus.OK, "", 0.75) == "0.750"
    assert shown(RolloutStatus.OK, "", None) == "-"
    assert shown(RolloutStatus.TIMEOUT, "policy", 0.25) == "0.000 (checker 0.250)"
    assert shown(RolloutStatus.HARNESS_ERROR, "policy", 0.0) == "0.000"
    assert shown(RolloutStatus.HARNESS_ERROR, "policy", None) == "0.000"
    assert shown(RolloutStatus.SANDBOX_ERROR, "infra", 0.5) == "- (checker 0.500)"
    assert shown(RolloutStatus.ENGINE_ERROR, "infra", None) == "-"
    r = Rollout(
        rollout_id="r", task_id="t", harness="h", status=RolloutStatus.TIMEOUT, fault="policy", reward=0.25
    )
    assert reward_shown(r, ["harness_error"]) == "- (checker 0.250)"  # timeouts not trained here


def test_option_is_the_dotted_override_for_the_chosen_harness() -> None:
    cfg = load_config(None, ["rollout.harness=claude-code", "rollout.harness_options.codex.x=1"])
    cfg = with_options(cfg, ["bare=true", 'model="m"'])
    assert cfg.rollout.harness_options == {"codex": {"x": 1}, "claude-code": {"bare": True, "model": "m"}}


def test_json_is_the_rollouts_and_summary_on_stdout(tmp_path: Path) -> None:
    proc = rollout(tmp_path, "--option", f"command={json.dumps(SOLVE)}", "--json")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    shown = json.loads(proc.stdout)
    (r,) = shown["rollouts"]
    assert {k: r[k] for k in ("rollout_id", "task_id", "harness", "status", "reward", "calls")} == {
        "rollout_id": "task_0000-shell-0", "task_id": "task_0000", "harness": "shell", "status": "ok",
        "reward": 1.0, "calls": 0,
    }  # fmt: skip
    assert r["workdir"] == str(tmp_path / "out" / "task_0000-shell-0")
    assert shown["summary"] == json.loads((tmp_path / "out" / "summary.json").read_text())
    first = f"rollout: 1 task(s) x 1 through shell = 1 rollout(s), 4 at once -> {tmp_path / 'out'}"
    assert proc.stderr.splitlines()[0] == first and "[1/1] task_0000-shell-0 ok" in proc.stderr
