"""Data parallel under torchrun (gloo, 2 ranks): the all-reduced gradient equals the one-process one."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch

DRIVER = """
import os, random, sys
import torch
import torch.distributed as dist
torch.set_num_threads(1)
from harnessrl.rl.advantages import broadcast, grpo_advantages
from harnessrl.rl.packing import layout_tree
from harnessrl.rl.synthetic import rollout_tree
from harnessrl.train import distributed as dp
from harnessrl.train.config import TrainerConfig
from harnessrl.train.models import tiny_causal_lm
from harnessrl.train.trainer import Trainer

if "RANK" in os.environ:
    dist.init_process_group("gloo")
rng = random.Random(0)
samples = [rollout_tree(rng, vocab=53, leaves=1 + i % 4, prefix=8, group_id=f"g{i // 3}") for i in range(6)]
for i, s in enumerate(samples):
    s.reward = float(i % 3 == 0)
adv = grpo_advantages([s.reward for s in samples], [s.group_id for s in samples])
layouts = [layout_tree(s) for s in samples]
advs = [broadcast(L, a) for L, a in zip(layouts, adv)]
# rank 1 starts from other weights: broadcast_params must overwrite them with rank 0's
cfg = TrainerConfig(lr=1e-3, grad_clip=None, token_budget=200)
tr = Trainer(tiny_causal_lm(vocab_size=53, seed=dp.rank()), cfg)
m = tr.step(dp.shard(layouts), dp.shard(advs))
if dp.rank() == 0:
    out = {"grads": [p.grad for p in tr.params], "weights": tr.weights(), "world": dp.world_size()}
    torch.save(out, sys.argv[1])
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.slow
def test_two_rank_gradient_equals_single_process(tmp_path: Path) -> None:
    script = tmp_path / "driver.py"
    script.write_text(DRIVER)
    env = dict(os.environ, OMP_NUM_THREADS="1")
    single = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "one.pt")],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert single.returncode == 0, single.stderr
    cmd = [
        sys.executable, "-m", "torch.distributed.run", "--nnodes=1", "--nproc-per-node=2",
        "--master-addr=127.0.0.1", f"--master-port={free_port()}", str(script), str(tmp_path / "two.pt"),
    ]  # fmt: skip
    multi = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert multi.returncode == 0, multi.stderr[-3000:]
    one = torch.load(tmp_path / "one.pt", weights_only=False)
    two = torch.load(tmp_path / "two.pt", weights_only=False)
    assert one["world"] == 1 and two["world"] == 2
    worst = max((a - b).abs().max().item() for a, b in zip(one["grads"], two["grads"], strict=True))
    assert worst < 1e-6
    assert max(g.abs().max().item() for g in one["grads"]) > 1e-4
