"""Trainer: (c) gradient accumulation equals one batch, hand-off, LoRA, value head / critic, KL, bf16."""

from __future__ import annotations

import random

import pytest
import torch

from harnessrl.config import LoraSettings, LossConfig, TrainerConfig
from harnessrl.rl.advantages import broadcast, grpo_advantages, ppo_advantages
from harnessrl.rl.forward import packed_forward
from harnessrl.rl.packing import TreeLayout, layout_tree, pack
from harnessrl.rl.synthetic import rollout_tree
from harnessrl.train.causal_lm import tiny_causal_lm
from harnessrl.train.trainer import Trainer

torch.set_num_threads(1)
VOCAB = 61


def batch_of(n: int = 4, seed: int = 0) -> tuple[list[TreeLayout], list[torch.Tensor]]:
    rng = random.Random(seed)
    samples = [
        rollout_tree(
            rng, vocab=VOCAB, leaves=1 + i % 3, prefix=10, group_id=f"g{i // 2}", reward=float(i % 2)
        )
        for i in range(n)
    ]
    layouts = [layout_tree(s) for s in samples]
    adv = grpo_advantages([s.reward for s in samples], [s.group_id for s in samples])
    return layouts, [broadcast(L, a) for L, a in zip(layouts, adv, strict=True)]


def grads(tr: Trainer) -> list[torch.Tensor]:
    return [p.grad.clone() if p.grad is not None else torch.zeros_like(p) for p in tr.params]


def test_gradient_accumulation_equals_one_batch() -> None:
    """Invariant (c): k micro-batches (small token budget) give the gradient of one big batch."""
    layouts, advs = batch_of(6)
    cfg = TrainerConfig(lr=1e-3, grad_clip=None, loss=LossConfig(tis_cap=2.0))
    one = Trainer(tiny_causal_lm(vocab_size=VOCAB, seed=1), cfg.model_copy(update={"token_budget": 100_000}))
    many = Trainer(tiny_causal_lm(vocab_size=VOCAB, seed=1), cfg.model_copy(update={"token_budget": 150}))
    m1 = one.step(layouts, advs)
    mk = many.step(layouts, advs)
    assert m1["micro_batches"] == 1 and mk["micro_batches"] >= 4
    assert m1["tokens"] == mk["tokens"] == sum(L.num_tokens for L in layouts)
    assert abs(m1["loss/total"] - mk["loss/total"]) < 1e-7
    worst = max((a - b).abs().max().item() for a, b in zip(grads(one), grads(many), strict=True))
    assert worst < 1e-7
    assert max(g.abs().max().item() for g in grads(one)) > 1e-4


def test_step_metrics_and_weights_hand_off() -> None:
    layouts, advs = batch_of(4)
    tr = Trainer(tiny_causal_lm(vocab_size=VOCAB, seed=2), TrainerConfig(lr=1e-2, warmup_steps=2))
    before = {k: v.clone() for k, v in tr.weights().items()}
    m = tr.step(layouts, advs)
    assert tr.state.step == 1
    assert m["lr"] == pytest.approx(0.5e-2)  # warmup step 1 of 2
    assert m["trained_tokens"] == sum(L.num_model_tokens for L in layouts)
    assert m["mismatch/abs_mean"] > 0.0  # synthetic rollout log-probs are not the model's
    assert m["ratio/mean"] == pytest.approx(1.0, abs=1e-6)  # first update: pi_theta == pi_old
    after = tr.weights()
    assert any(not torch.equal(before[k], after[k]) for k in before)
    fresh = tiny_causal_lm(vocab_size=VOCAB, seed=99)
    fresh.load_state_dict(after)
    batch = pack(layouts, [0])
    with torch.no_grad():
        a = packed_forward(tr.model, batch).logprobs
        b = packed_forward(fresh, batch).logprobs
    assert torch.equal(a, b)


def test_lora_trains_adapters_and_hands_off_merged_weights() -> None:
    pytest.importorskip("peft")
    layouts, advs = batch_of(4)
    cfg = TrainerConfig(lr=5e-2, lora=LoraSettings(r=4, alpha=8, target_modules=["q_proj", "v_proj"]))
    tr = Trainer(tiny_causal_lm(vocab_size=VOCAB, seed=3), cfg)
    names = [n for n, p in tr.model.named_parameters() if p.requires_grad]
    assert names and all("lora_" in n for n in names)
    tr.step(layouts, advs)
    tr.step(layouts, advs)
    merged = tr.weights()
    base = tiny_causal_lm(vocab_size=VOCAB, seed=3)
    assert set(merged) == set(base.state_dict())
    base.load_state_dict(merged)
    batch = pack(layouts, [0, 1])
    with torch.no_grad():
        a = packed_forward(tr.model, batch).logprobs
        b = packed_forward(base, batch).logprobs
        c = packed_forward(tiny_causal_lm(vocab_size=VOCAB, seed=3), batch).logprobs
    assert (a - b).abs().max().item() < 1e-5
    assert (a - c).abs().max().item() > 1e-3  # the adapters did change the policy


@pytest.mark.parametrize("value", ["head", "critic"])
def test_ppo_value_model_step(value: str) -> None:
    layouts, _ = batch_of(3)
    critic = tiny_causal_lm(vocab_size=VOCAB, seed=5) if value == "critic" else None
    tr = Trainer(tiny_causal_lm(vocab_size=VOCAB, seed=4), TrainerConfig(lr=1e-2, value=value), critic=critic)
    values = tr.values(layouts)
    assert all(torch.equal(v, torch.zeros(L.num_tokens)) for v, L in zip(values, layouts, strict=True))
    targets = [ppo_advantages(L, v, [1.0] * len(L.path_tokens)) for L, v in zip(layouts, values, strict=True)]
    with pytest.raises(ValueError, match="value targets"):
        tr.prepare(layouts, [a for a, _ in targets])
    m = tr.step(layouts, [a for a, _ in targets], returns=[r for _, r in targets])
    assert m["value/mse"] == pytest.approx(1.0)  # V = 0, G = 1 on every trained token
    new = tr.values(layouts)
    assert all(float(v[L.loss_mask].mean()) > 0.0 for v, L in zip(new, layouts, strict=True))


def test_kl_to_reference_is_zero_at_start_and_grows() -> None:
    layouts, advs = batch_of(4)
    cfg = TrainerConfig(lr=3e-2, loss=LossConfig(kl_coef=0.1))
    with pytest.raises(ValueError, match="ref_model"):
        Trainer(tiny_causal_lm(vocab_size=VOCAB, seed=6), cfg)
    tr = Trainer(
        tiny_causal_lm(vocab_size=VOCAB, seed=6), cfg, ref_model=tiny_causal_lm(vocab_size=VOCAB, seed=6)
    )
    assert tr.step(layouts, advs)["kl/k3"] == pytest.approx(0.0, abs=1e-12)
    assert tr.step(layouts, advs)["kl/k3"] > 1e-6


def test_bf16_autocast_step_runs() -> None:
    layouts, advs = batch_of(2)
    tr = Trainer(tiny_causal_lm(vocab_size=VOCAB, seed=7), TrainerConfig(lr=1e-3, bf16=True))
    m = tr.step(layouts, advs)
    assert torch.isfinite(torch.tensor(m["loss/total"]))
    assert all(p.dtype == torch.float32 for p in tr.params)


def test_flex_attention_training_is_refused_on_cpu() -> None:
    cfg = TrainerConfig(attention="flex")
    with pytest.raises(ValueError, match="no CPU backward"):
        Trainer(tiny_causal_lm(vocab_size=VOCAB), cfg)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_flex_attention_step_equals_sdpa_step_on_gpu() -> None:
    """The trainer's FlexAttention path gives the SDPA path's loss and gradient (CUDA has a Flex backward)."""
    layouts, advs = batch_of(3)
    base = TrainerConfig(lr=1e-3, grad_clip=None)
    sdpa = Trainer(tiny_causal_lm(vocab_size=VOCAB, seed=8).cuda(), base)
    flex = Trainer(
        tiny_causal_lm(vocab_size=VOCAB, seed=8).cuda(), base.model_copy(update={"attention": "flex"})
    )
    a, b = sdpa.step(layouts, advs), flex.step(layouts, advs)
    assert abs(a["loss/total"] - b["loss/total"]) < 1e-5
    worst = max((x - y).abs().max().item() for x, y in zip(grads(sdpa), grads(flex), strict=True))
    assert worst < 1e-4


def test_fsdp_without_torchrun_is_refused() -> None:
    with pytest.raises(ValueError, match="torchrun"):
        Trainer(tiny_causal_lm(vocab_size=VOCAB), TrainerConfig(fsdp=True))


def test_one_forward_per_step_gives_the_on_policy_gradient_and_the_mismatch() -> None:
    """The update's own forward supplies logp_old (no second pass): the gradient is that of the
    truncated-IS policy gradient sum_t w_t * A_t * min(exp(old - rollout), cap) * grad log p_t, and the
    mismatch metrics are those of a separate forward under the same weights."""
    layouts, advs = batch_of(5, seed=3)
    for L in layouts:  # sampler log-probs that differ from the trainer's
        noise = torch.rand(int(L.loss_mask.sum()), generator=torch.Generator().manual_seed(7))
        L.rollout_logprobs[L.loss_mask] = -noise
    cap = 2.0
    cfg = TrainerConfig(lr=1e-3, grad_clip=None, loss=LossConfig(tis_cap=cap))
    tr = Trainer(tiny_causal_lm(vocab_size=VOCAB, seed=9), cfg)
    ref = Trainer(tiny_causal_lm(vocab_size=VOCAB, seed=9), cfg)
    old = ref.logprobs(layouts)
    m = tr.step(layouts, advs)
    diffs = torch.cat(
        [(o - L.rollout_logprobs)[L.loss_mask].abs() for o, L in zip(old, layouts, strict=True)]
    )
    assert m["mismatch/abs_mean"] == pytest.approx(float(diffs.mean()), rel=1e-5)
    assert m["mismatch/abs_max"] == pytest.approx(float(diffs.max()), rel=1e-5)
    # the same gradient by hand: one packed forward, the surrogate with the truncated IS weight
    from harnessrl.rl.advantages import rollout_token_weights

    weights = rollout_token_weights(layouts)
    ref.model.train()
    batch = pack(layouts, range(len(layouts)), {"adv": advs, "w": weights})
    out = packed_forward(ref.model, batch)
    mask = batch.loss_mask
    lp = out.logprobs
    tis = torch.exp(lp.detach() - batch.rollout_logprobs[mask]).clamp(max=cap)
    surrogate = -(batch.extras["w"][mask] * batch.extras["adv"][mask] * tis * lp).sum()
    surrogate.backward()
    worst = max((a - b).abs().max().item() for a, b in zip(grads(tr), grads(ref), strict=True))
    assert worst < 1e-6 and max(g.abs().max().item() for g in grads(tr)) > 1e-4


@pytest.mark.parametrize("value", ["none", "head"])
def test_shared_prefixes_give_the_same_step(value: str) -> None:
    """`share_prefixes` forwards each shared prompt once: same loss, gradient and metrics, fewer tokens."""
    from test_rl_packing import shared_prompt_trees

    samples = shared_prompt_trees(2, vocab=VOCAB)
    for i, s in enumerate(samples):
        s.reward = float(i % 3 == 0)
    layouts = [layout_tree(s) for s in samples]
    adv = grpo_advantages([s.reward for s in samples], [s.group_id for s in samples])
    advs = [broadcast(L, a) for L, a in zip(layouts, adv, strict=True)]
    rets = [a * 0.5 + 1.0 for a in advs] if value == "head" else None
    cfg = TrainerConfig(lr=1e-3, grad_clip=None, value=value, loss=LossConfig(tis_cap=2.0))  # type: ignore[arg-type]
    off = Trainer(tiny_causal_lm(vocab_size=VOCAB, seed=4), cfg.model_copy(update={"share_prefixes": False}))
    on = Trainer(tiny_causal_lm(vocab_size=VOCAB, seed=4), cfg)
    m_off, m_on = off.step(layouts, advs, returns=rets), on.step(layouts, advs, returns=rets)
    assert m_on["tokens"] < m_off["tokens"] - 100 and m_on["trained_tokens"] == m_off["trained_tokens"]
    for k in ("loss/total", "loss/pg", "ratio/mean", "tis/mean", "mismatch/abs_mean", "entropy"):
        assert m_on[k] == pytest.approx(m_off[k], rel=1e-5, abs=1e-7), k
    worst = max((a - b).abs().max().item() for a, b in zip(grads(on), grads(off), strict=True))
    assert worst < 1e-6 and max(g.abs().max().item() for g in grads(on)) > 1e-4
