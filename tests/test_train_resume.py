"""Invariant (h): a run killed mid-step and resumed from its checkpoint ends bit-identical on CPU.

Two versions: in-process (the trainer object is dropped mid-step and the global RNGs are scrambled
before resuming; fast), and a real SIGKILL of a subprocess (slow: three interpreter start-ups)."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from harnessrl.config import TrainerConfig
from harnessrl.rl.advantages import broadcast, grpo_advantages
from harnessrl.rl.packing import layout_tree
from harnessrl.rl.synthetic import rollout_tree
from harnessrl.train.causal_lm import tiny_causal_lm
from harnessrl.train.checkpoint import TrainState, latest_checkpoint, prune_checkpoints, save_checkpoint
from harnessrl.train.trainer import Trainer

TASKS = [f"task{i}" for i in range(64)]


class Killed(Exception):
    pass


def train_loop(out: Path, steps: int, kill_at: int, hard: bool) -> Trainer:
    """Train `steps` steps (data drawn from the torch and python RNGs), checkpointing every step; resume
    from the latest checkpoint if there is one; die mid-step `kill_at` (SIGKILL if `hard`)."""
    torch.set_num_threads(1)
    cfg = TrainerConfig(
        lr=1e-2, token_budget=120, warmup_steps=2, schedule="cosine", total_steps=steps, seed=1
    )
    tr = Trainer(tiny_causal_lm(vocab_size=50, seed=0), cfg)
    last = latest_checkpoint(out / "ckpt")
    if last is not None:
        tr.load(last)
    else:
        torch.manual_seed(123)
        random.seed(123)
    while tr.state.step < steps:
        pos = tr.state.data_position
        samples = []
        for t in TASKS[pos : pos + 2]:
            for _ in range(2):
                seed = int(torch.randint(0, 2**31 - 1, (1,)))
                leaves = random.randint(1, 3)
                tree = rollout_tree(random.Random(seed), vocab=50, leaves=leaves, prefix=6, group_id=t)
                tree.reward = random.random()
                samples.append(tree)
        layouts = [layout_tree(s) for s in samples]
        adv = grpo_advantages([s.reward for s in samples], [s.group_id for s in samples])
        prepared = tr.prepare(layouts, [broadcast(L, a) for L, a in zip(layouts, adv, strict=True)])
        if tr.state.step == kill_at:  # mid-step: after prepare, before the update
            if hard:
                os.kill(os.getpid(), signal.SIGKILL)
            raise Killed
        tr.update(prepared)
        tr.state.data_position += 2
        tr.save(out / "ckpt")
    return tr


def assert_same(a: Trainer, b: Trainer) -> None:
    wa, wb = a.weights(), b.weights()
    assert wa.keys() == wb.keys() and all(torch.equal(wa[k], wb[k]) for k in wa)
    sa, sb = a.optimizer.state_dict()["state"], b.optimizer.state_dict()["state"]
    assert all(torch.equal(sa[i]["exp_avg_sq"], sb[i]["exp_avg_sq"]) for i in sa)
    assert a.state == b.state and a.scheduler.get_last_lr() == b.scheduler.get_last_lr()


def test_resume_in_process_is_bit_identical(tmp_path: Path) -> None:
    full = train_loop(tmp_path / "full", 4, kill_at=-1, hard=False)
    with pytest.raises(Killed):
        train_loop(tmp_path / "cut", 4, kill_at=2, hard=False)
    torch.manual_seed(999)  # whatever happened to the RNGs after the kill must not matter
    random.seed(999)
    resumed = train_loop(tmp_path / "cut", 4, kill_at=-1, hard=False)
    assert_same(full, resumed)
    first = torch.load(tmp_path / "full" / "ckpt" / "step-00000001" / "state.pt", weights_only=False)["model"]
    final = full.weights()
    assert any(not torch.equal(first[k], final[k]) for k in final)  # the run really moved


DRIVER = """
import sys
from pathlib import Path
sys.path.insert(0, {tests!r})
import torch
from test_train_resume import train_loop
out = Path(sys.argv[1])
tr = train_loop(out, int(sys.argv[2]), int(sys.argv[3]), hard=True)
torch.save({{"w": tr.weights(), "opt": tr.optimizer.state_dict()}}, out / "final.pt")
"""


def run(tmp: Path, name: str, steps: int, kill_at: int) -> subprocess.CompletedProcess[str]:
    script = tmp / "driver.py"
    script.write_text(DRIVER.format(tests=str(Path(__file__).parent)))
    env = dict(os.environ, OMP_NUM_THREADS="1")
    cmd = [sys.executable, str(script), str(tmp / name), str(steps), str(kill_at)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)


@pytest.mark.slow
def test_resume_after_sigkill_is_bit_identical(tmp_path: Path) -> None:
    full = run(tmp_path, "full", 5, kill_at=-1)
    assert full.returncode == 0, full.stderr
    killed = run(tmp_path, "cut", 5, kill_at=3)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    ck = latest_checkpoint(tmp_path / "cut" / "ckpt")
    assert ck is not None and ck.name == "step-00000003"
    resumed = run(tmp_path, "cut", 5, kill_at=-1)
    assert resumed.returncode == 0, resumed.stderr
    a = torch.load(tmp_path / "full" / "final.pt", weights_only=False)
    b = torch.load(tmp_path / "cut" / "final.pt", weights_only=False)
    assert all(torch.equal(a["w"][k], b["w"][k]) for k in a["w"])
    sa, sb = a["opt"]["state"], b["opt"]["state"]
    assert all(torch.equal(sa[i]["exp_avg_sq"], sb[i]["exp_avg_sq"]) for i in sa)


def test_prune_keeps_the_newest_complete_checkpoints(tmp_path: Path) -> None:
    for step in (1, 2, 3, 10):
        save_checkpoint(tmp_path, TrainState(step=step), {"w": torch.zeros(1)})
    (tmp_path / ".tmp-step-00000011-1").mkdir()  # a save in progress: not a checkpoint, left alone
    assert prune_checkpoints(tmp_path, 0) == []
    gone = prune_checkpoints(tmp_path, 2)
    assert [p.name for p in gone] == ["step-00000001", "step-00000002"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        ".tmp-step-00000011-1",
        "step-00000003",
        "step-00000010",
    ]
    assert latest_checkpoint(tmp_path) == tmp_path / "step-00000010"
    assert prune_checkpoints(tmp_path / "missing", 1) == []
