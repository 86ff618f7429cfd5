"""Losses: exact values, (g) TIS truncation at c, (b) packed loss/gradient equals de-duplicated per-path."""

from __future__ import annotations

import math
import random

import pytest
import torch

from harnessrl.config import LossConfig
from harnessrl.rl.advantages import broadcast, grpo_advantages, rollout_token_weights
from harnessrl.rl.forward import packed_forward, path_logprobs
from harnessrl.rl.losses import Metrics, policy_loss, tis_weights, value_loss
from harnessrl.rl.packing import layout_tree, pack
from harnessrl.rl.synthetic import rollout_tree
from harnessrl.train.causal_lm import tiny_causal_lm

torch.set_num_threads(1)


def test_tis_weights_are_truncated_at_c() -> None:
    """Invariant (g)."""
    old = torch.tensor([-1.0, -1.0, -1.0, -1.0])
    rollout = torch.tensor([-1.0, -2.0, -0.5, -5.0])
    w = tis_weights(old, rollout, cap=2.0)
    assert w.tolist() == pytest.approx([1.0, 2.0, math.exp(-0.5), 2.0])
    assert tis_weights(old, rollout, cap=3.0)[1].item() == pytest.approx(math.e)
    assert torch.equal(tis_weights(old, rollout, cap=None), torch.ones(4))
    m = Metrics()
    policy_loss(old.clone(), old, rollout, torch.ones(4), torch.ones(4), LossConfig(), metrics=m)
    r = m.result()
    assert r["mismatch/frac_truncated"] == pytest.approx(0.5)
    assert r["mismatch/abs_max"] == pytest.approx(4.0)
    assert r["mismatch/abs_mean"] == pytest.approx((0 + 1 + 0.5 + 4) / 4)


def test_policy_loss_exact_values() -> None:
    cfg = LossConfig(clip_low=0.2, clip_high=0.3, tis_cap=2.0)
    logp = torch.tensor([0.0, 0.0, 0.0], requires_grad=True)
    old = torch.log(torch.tensor([0.5, 2.0, 1.0]))  # ratios 2.0, 0.5, 1.0
    roll = old.clone()
    roll[2] = old[2] + math.log(4.0)  # w = 1/4 on the third token
    adv = torch.tensor([1.0, -1.0, 2.0])
    wts = torch.tensor([0.5, 0.25, 0.25])
    m = Metrics()
    loss = policy_loss(logp, old, roll, adv, wts, cfg, metrics=m)
    # token 0: min(2*1, 1.3*1) = 1.3; token 1: min(0.5*-1, 0.8*-1) = -0.8; token 2: 1*2 * w(0.25)
    assert loss.item() == pytest.approx(-(0.5 * 1.3 + 0.25 * -0.8 + 0.25 * 0.25 * 2.0))
    loss.backward()
    assert logp.grad is not None
    # clipped tokens have zero gradient; the third has d/dlogp = -w*A*rho*weight
    assert logp.grad.tolist() == pytest.approx([0.0, 0.0, -0.25 * 2.0 * 0.25])
    assert m.result()["ratio/clipfrac"] == pytest.approx(2 / 3)


def test_kl_k3_and_value_loss() -> None:
    cfg = LossConfig(tis_cap=None, kl_coef=0.5)
    logp = torch.tensor([-1.0])
    ref = torch.tensor([-1.5])
    loss = policy_loss(logp, logp, logp, torch.zeros(1), torch.ones(1), cfg, logp_ref=ref)
    q = -0.5
    assert loss.item() == pytest.approx(0.5 * (math.exp(q) - q - 1))
    with pytest.raises(ValueError):
        policy_loss(logp, logp, logp, torch.zeros(1), torch.ones(1), cfg)
    v = torch.tensor([1.0, 0.0])
    lv = value_loss(v, torch.tensor([0.0, 0.0]), torch.tensor([0.0, 1.0]), torch.ones(2), clip=0.2)
    # token 0: max(1, (0.2-0)^2) = 1; token 1: max(1, (0-1)^2) = 1
    assert lv.item() == pytest.approx(0.5 * 1.0 + 0.5 * 1.0)
    lv2 = value_loss(torch.tensor([0.5]), torch.tensor([0.0]), torch.tensor([1.0]), torch.ones(1), clip=0.2)
    assert lv2.item() == pytest.approx(0.5 * max(0.25, 0.64))


def test_packed_loss_and_grad_equal_dedup_per_path() -> None:
    """Invariant (b): one packed forward vs. path-by-path forwards with shared tokens counted once."""
    model = tiny_causal_lm(vocab_size=89, seed=5)
    rng = random.Random(7)
    trees = [rollout_tree(rng, vocab=89, leaves=k, prefix=12, rollout_id=f"r{k}") for k in (2, 4)]
    layouts = [layout_tree(t) for t in trees]
    adv = grpo_advantages([1.0, 0.0], ["g", "g"])
    advs = [broadcast(L, a) for L, a in zip(layouts, adv, strict=True)]
    wts = rollout_token_weights(layouts)
    cfg = LossConfig(tis_cap=2.0)
    params = [p for p in model.parameters() if p.requires_grad]

    batch = pack(layouts, [0, 1], {"adv": advs, "w": wts})
    out = packed_forward(model, batch)
    old = out.logprobs.detach() + 0.05  # a non-trivial ratio and IS weight
    roll = batch.rollout_logprobs[batch.loss_mask]
    loss_packed = policy_loss(out.logprobs, old, roll, batch.model_extra("adv"), batch.model_extra("w"), cfg)
    g_packed = torch.autograd.grad(loss_packed, params)

    # per path: each trained token taken from the first path that contains it
    terms = []
    for L, a, w in zip(layouts, advs, wts, strict=True):
        seen: set[int] = set()
        for p, toks in enumerate(L.path_tokens):
            lp = path_logprobs(model, L, p)
            for j, t in enumerate(toks.tolist()):
                if L.loss_mask[t] and t not in seen:
                    seen.add(t)
                    terms.append((lp[j], roll.new_tensor(float(L.rollout_logprobs[t])), a[t], w[t]))
    lp_path = torch.stack([x[0] for x in terms])
    assert lp_path.numel() == out.logprobs.numel()
    loss_path = policy_loss(
        lp_path,
        lp_path.detach() + 0.05,
        torch.stack([x[1] for x in terms]),
        torch.stack([x[2] for x in terms]),
        torch.stack([x[3] for x in terms]),
        cfg,
    )
    g_path = torch.autograd.grad(loss_path, params)
    assert abs(loss_packed.item() - loss_path.item()) < 1e-6
    worst = max((a - b).abs().max().item() for a, b in zip(g_packed, g_path, strict=True))
    assert worst < 1e-6
    assert max(g.abs().max().item() for g in g_packed) > 1e-4  # the gradient is not trivially zero
