"""Data parallel and FSDP2 under torchrun (gloo, 2 ranks): the summed gradient equals the one-process one."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

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
from harnessrl.config import TrainerConfig
from harnessrl.train.causal_lm import tiny_causal_lm
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
# budget 400: rank 0 packs its trees into 2 micro-batches, rank 1 into 3 (FSDP must pad rank 0)
cfg = TrainerConfig(lr=1e-3, grad_clip=None, token_budget=400, fsdp=sys.argv[2] == "fsdp")
tr = Trainer(tiny_causal_lm(vocab_size=53, seed=dp.rank()), cfg)
prepared = tr.prepare(dp.shard(layouts), dp.shard(advs))
m = tr.update(prepared)
grads = [p.grad.full_tensor() if hasattr(p.grad, "full_tensor") else p.grad for p in tr.params]
weights = tr.weights()
micro = [len(prepared.micro)] * dp.world_size()
if dp.active():
    dist.all_gather_object(micro, len(prepared.micro))
if dp.rank() == 0:
    out = {"grads": grads, "weights": weights, "world": dp.world_size(), "micro": micro, "metrics": m}
    torch.save(out, sys.argv[1])
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run_driver(tmp: Path, name: str, mode: str, ranks: int) -> dict[str, Any]:
    script = tmp / "driver.py"
    script.write_text(DRIVER)
    env = dict(os.environ, OMP_NUM_THREADS="1")
    out = tmp / f"{name}.pt"
    cmd = [sys.executable, str(script), str(out), mode]
    if ranks > 1:
        cmd[1:1] = ["-m", "torch.distributed.run", "--nnodes=1", f"--nproc-per-node={ranks}",
                    "--master-addr=127.0.0.1", f"--master-port={free_port()}"]  # fmt: skip
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result: dict[str, Any] = torch.load(out, weights_only=False)
    return result


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["dp", "fsdp"])
def test_two_ranks_gradient_equals_single_process(tmp_path: Path, mode: str) -> None:
    one = run_driver(tmp_path, "one", "dp", 1)
    two = run_driver(tmp_path, "two", mode, 2)
    assert one["world"] == 1 and two["world"] == 2
    assert two["micro"] == [2, 3]
    # the step's metrics are the whole step's on every rank (`distributed.merge_metrics`)
    assert two["metrics"]["micro_batches"] == 5 and one["metrics"]["micro_batches"] == 5
    assert two["metrics"]["trained_tokens"] == one["metrics"]["trained_tokens"]
    assert two["metrics"]["loss/total"] == pytest.approx(one["metrics"]["loss/total"], abs=1e-6)
    worst = max((a - b).abs().max().item() for a, b in zip(one["grads"], two["grads"], strict=True))
    assert worst < 1e-6
    assert max(g.abs().max().item() for g in one["grads"]) > 1e-4
    assert one["weights"].keys() == two["weights"].keys()
    assert all(one["weights"][k].shape == two["weights"][k].shape for k in one["weights"])
