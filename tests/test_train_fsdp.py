"""FSDP2 completed, under torchrun with gloo and 2 CPU ranks: sharded checkpoints resume exactly, and
LoRA trains under FSDP; both give the losses and weights of one plain process.

Each run trains 3 steps on synthetic trees (warmup + cosine schedule, gradient clipping). `full`
checkpoints after step 2 and goes on; `resume` is a fresh set of processes that loads that checkpoint
and runs step 3. Three interpreter start-ups per case (two of them torchrun with 2 ranks): slow.
"""

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
from harnessrl.config import LoraSettings, TrainerConfig
from harnessrl.rl.advantages import broadcast, grpo_advantages
from harnessrl.rl.packing import layout_tree
from harnessrl.rl.synthetic import rollout_tree
from harnessrl.train import distributed as dp
from harnessrl.train.checkpoint import latest_checkpoint
from harnessrl.train.causal_lm import tiny_causal_lm
from harnessrl.train.trainer import Trainer

out, mode, lora, phase, ckpt = sys.argv[1:6]
if "RANK" in os.environ:
    dist.init_process_group("gloo")


def batch(step):
    rng = random.Random(100 + step)
    samples = [
        rollout_tree(rng, vocab=53, leaves=1 + i % 4, prefix=8, group_id=f"g{i // 3}") for i in range(6)
    ]
    for i, s in enumerate(samples):
        s.reward = float((i + step) % 3 == 0)
    adv = grpo_advantages([s.reward for s in samples], [s.group_id for s in samples])
    layouts = [layout_tree(s) for s in samples]
    return dp.shard(layouts), dp.shard([broadcast(L, a) for L, a in zip(layouts, adv)])


adapters = LoraSettings(r=4, alpha=8, target_modules=["q_proj", "v_proj"]) if lora == "1" else None
cfg = TrainerConfig(
    lr=5e-2 if adapters else 1e-2, token_budget=400, warmup_steps=1, schedule="cosine", total_steps=3,
    fsdp=mode == "fsdp", lora=adapters, seed=4,
)
tr = Trainer(tiny_causal_lm(vocab_size=53, seed=dp.rank()), cfg)
if phase == "resume":
    tr.load(latest_checkpoint(ckpt))
losses = []
while tr.state.step < 3:
    layouts, advs = batch(tr.state.step)
    m = tr.step(layouts, advs)
    losses.append(m["loss/total"])  # the whole step's, over both ranks
    tr.state.data_position += 1
    if phase == "full" and tr.state.step == 2:
        tr.save(ckpt)
weights = tr.weights()  # collective under FSDP
probe = torch.rand(4)  # the RNG streams continue as in the uninterrupted run
if dp.rank() == 0:
    torch.save({"losses": losses, "weights": weights, "probe": probe, "state": vars(tr.state),
                "lr": tr.scheduler.get_last_lr(), "world": dp.world_size(),
                "trainable": sum(p.numel() for p in tr.params)}, out)
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def launch(tmp: Path, name: str, ranks: int, *args: str) -> dict[str, Any]:
    script = tmp / "driver.py"
    script.write_text(DRIVER)
    out = tmp / f"{name}.pt"
    cmd = [sys.executable, str(script), str(out), *args]
    if ranks > 1:
        cmd[1:1] = ["-m", "torch.distributed.run", "--nnodes=1", f"--nproc-per-node={ranks}",
                    "--master-addr=127.0.0.1", f"--master-port={free_port()}"]  # fmt: skip
    env = dict(os.environ, OMP_NUM_THREADS="1")
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result: dict[str, Any] = torch.load(out, weights_only=False)
    return result


def max_diff(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    assert a.keys() == b.keys()
    return max((a[k] - b[k]).abs().max().item() for k in a)


@pytest.mark.slow
@pytest.mark.parametrize("lora", ["0", "1"], ids=["full-weights", "lora"])
def test_fsdp_two_ranks_resume_exactly_and_match_one_process(tmp_path: Path, lora: str) -> None:
    ckpt = tmp_path / "ckpt"
    one = launch(tmp_path, "one", 1, "plain", lora, "full", str(tmp_path / "ckpt-one"))
    full = launch(tmp_path, "full", 2, "fsdp", lora, "full", str(ckpt))
    (saved,) = sorted(p.name for p in ckpt.iterdir())
    assert saved == "step-00000002"
    assert sorted(p.name for p in (ckpt / saved).iterdir()) == [
        "meta.json", "rng-0.pt", "rng-1.pt", "shards", "state.pt"
    ]  # fmt: skip
    resumed = launch(tmp_path, "resumed", 2, "fsdp", lora, "resume", str(ckpt))
    assert (one["world"], full["world"], resumed["world"]) == (1, 2, 2)

    # Same losses and weights as one plain process. FSDP sums gradients in another order (~1e-7
    # apart), which AdamW turns into up to ~2e-5 on weights that each step moves by up to lr = 1e-2.
    assert len(one["losses"]) == len(full["losses"]) == 3
    assert all(abs(a - b) < 1e-5 for a, b in zip(one["losses"], full["losses"], strict=True))
    assert max(abs(x) for x in one["losses"]) > 1e-4
    assert max_diff(one["weights"], full["weights"]) < 1e-4
    if lora == "1":  # adapters only, merged into plain names for the engine
        assert not any("lora_" in k for k in full["weights"])
        assert 0 < full["trainable"] == one["trainable"] < 10_000  # the adapters (global numel)

    # The resumed processes run step 3 exactly as the uninterrupted ones did.
    assert resumed["losses"] == full["losses"][2:]
    assert max_diff(full["weights"], resumed["weights"]) == 0.0
    assert torch.equal(full["probe"], resumed["probe"])
    assert full["state"] == resumed["state"] == {"step": 3, "data_position": 3}
    assert full["lr"] == resumed["lr"]


def test_merge_lora_from_tensors_equals_peft_delta() -> None:
    """What rank 0 computes from gathered tensors is peft's own W + delta, bit for bit."""
    from peft.tuners.lora import LoraLayer

    from harnessrl.config import LoraSettings
    from harnessrl.train.causal_lm import tiny_causal_lm
    from harnessrl.train.lora import apply_lora, lora_scalings, merged_state_dict

    model = apply_lora(tiny_causal_lm(vocab_size=53, seed=0), LoraSettings(r=4, alpha=8))
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_B" in name:  # peft starts B at zero: make the deltas non-zero
                p.copy_(torch.randn_like(p))
    merged = merged_state_dict(model)
    scalings = lora_scalings(model)
    assert len(scalings) == 2 * 7 and all(v == {"default": 2.0} for v in scalings.values())
    for mname, module in model.named_modules():
        if isinstance(module, LoraLayer):
            key = mname.removeprefix("base_model.model.") + ".weight"
            expected = module.get_base_layer().weight + module.get_delta_weight("default")
            assert torch.equal(merged[key], expected.detach())
    assert not any("lora_" in k or "base_layer" in k for k in merged)
