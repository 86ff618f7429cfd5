"""Tree packing: layout, masks, first-fit, and invariant (a): packed log-probs equal per-path ones."""

from __future__ import annotations

import random
from dataclasses import replace
from itertools import pairwise

import pytest
import torch

from harnessrl.rl.forward import packed_forward, path_logprobs, set_attention
from harnessrl.rl.packing import first_fit, layout_tree, pack, pack_by_budget, tree_attention_mask
from harnessrl.rl.synthetic import rollout_tree
from harnessrl.rl.tree_attention import plan_tree_attention
from harnessrl.train.causal_lm import tiny_causal_lm
from harnessrl.types import TreeNode, TreeSample

torch.set_num_threads(1)


def small_tree() -> TreeSample:
    """root [1,2,3] env; A=[4 env, 5 6 model] under root; B=[7 model] under A; C=[8 9 model] under root."""
    nodes = [
        TreeNode(node_id=0, parent=-1, tokens=[1, 2, 3], model_mask=[False] * 3, logprobs=[0.0] * 3),
        TreeNode(
            node_id=1, parent=0, tokens=[4, 5, 6], model_mask=[False, True, True], logprobs=[0, -0.5, -0.6]
        ),
        TreeNode(node_id=2, parent=0, tokens=[8, 9], model_mask=[True, True], logprobs=[-0.8, -0.9]),
        TreeNode(node_id=3, parent=1, tokens=[7], model_mask=[True], logprobs=[-0.7]),
        TreeNode(node_id=4, parent=0, tokens=[10], model_mask=[True], logprobs=[-1.0]),  # not on a kept path
    ]
    return TreeSample(rollout_id="r", group_id="g", reward=1.0, nodes=nodes, paths=[[0, 1, 3], [0, 2]])


def test_layout_of_small_tree_is_depth_first_with_exact_arrays() -> None:
    L = layout_tree(small_tree())
    assert L.input_ids.tolist() == [1, 2, 3, 4, 5, 6, 7, 8, 9]
    assert L.position_ids.tolist() == [0, 1, 2, 3, 4, 5, 6, 3, 4]
    assert L.pred_index.tolist() == [-1, 0, 1, 2, 3, 4, 5, 2, 7]
    assert L.subtree_end.tolist() == [9, 9, 9, 7, 7, 7, 7, 9, 9]
    assert L.loss_mask.tolist() == [False, False, False, False, True, True, True, True, True]
    assert L.rollout_logprobs.tolist() == pytest.approx([0, 0, 0, 0, -0.5, -0.6, -0.7, -0.8, -0.9])
    assert [p.tolist() for p in L.path_tokens] == [[0, 1, 2, 3, 4, 5, 6], [0, 1, 2, 7, 8]]
    assert L.num_model_tokens == 5


def test_tree_mask_is_exactly_ancestors_including_self() -> None:
    L = layout_tree(small_tree())
    m = tree_attention_mask(L.subtree_end)
    ancestors = {i: set() for i in range(9)}
    for i in range(9):
        j = i
        while j >= 0:
            ancestors[i].add(j)
            j = int(L.pred_index[j])
    expected = torch.tensor([[k in ancestors[q] for k in range(9)] for q in range(9)])
    assert torch.equal(m, expected)


def test_bad_path_is_rejected() -> None:
    s = small_tree()
    s.paths = [[0, 3]]
    with pytest.raises(ValueError, match="parent chain"):
        layout_tree(s)


def test_first_fit_bins() -> None:
    assert first_fit([5, 4, 3, 2, 9, 1], budget=8) == [[0, 2], [1, 3, 5], [4]]
    assert first_fit([], budget=8) == []
    with pytest.raises(ValueError):
        first_fit([1], budget=0)


def test_pack_offsets_and_extras() -> None:
    a = layout_tree(small_tree())
    b = layout_tree(rollout_tree(random.Random(1), vocab=50, leaves=2, prefix=4))
    adv = [torch.full((a.num_tokens,), 1.0), torch.full((b.num_tokens,), 2.0)]
    batch = pack([a, b], [1, 0], {"adv": adv})
    assert batch.offsets == [0, b.num_tokens]
    assert batch.pred_index[b.num_tokens :].tolist() == [-1] + [
        p + b.num_tokens for p in a.pred_index[1:].tolist()
    ]
    assert batch.subtree_end.max().item() == a.num_tokens + b.num_tokens
    assert batch.extras["adv"].tolist() == [2.0] * b.num_tokens + [1.0] * a.num_tokens
    assert batch.rollout_index.tolist() == [1] * b.num_tokens + [0] * a.num_tokens
    # trees never see each other
    m = tree_attention_mask(batch.subtree_end)
    assert not m[b.num_tokens :, : b.num_tokens].any() and not m[: b.num_tokens, b.num_tokens :].any()


def _check_packed_equals_paths(attention: str) -> float:
    model = tiny_causal_lm(vocab_size=97, seed=3)
    set_attention(model, attention)  # type: ignore[arg-type]
    rng = random.Random(0)
    trees = [rollout_tree(rng, vocab=97, leaves=k, prefix=20) for k in (1, 3, 5)]
    layouts = [layout_tree(t) for t in trees]
    batches = pack_by_budget(layouts, budget=10_000)
    assert len(batches) == 1
    with torch.no_grad():
        out = packed_forward(model, batches[0], attention=attention)  # type: ignore[arg-type]
        set_attention(model, "sdpa")
        got = torch.zeros(batches[0].num_tokens)
        got[batches[0].model_positions()] = out.logprobs
        worst = 0.0
        for L, off in zip(layouts, batches[0].offsets, strict=True):
            for p in range(len(L.path_tokens)):
                ref = path_logprobs(model, L, p)
                idx = L.path_tokens[p]
                trained = L.loss_mask[idx]
                diff = (got[idx + off][trained] - ref[trained]).abs().max().item()
                worst = max(worst, diff)
    return worst


def test_packed_logprobs_equal_per_path_sdpa() -> None:
    """Invariant (a): max abs diff < 1e-5 in float32."""
    assert _check_packed_equals_paths("sdpa") < 1e-5


def test_tree_mask_really_reaches_the_model() -> None:
    """A causal (not tree) mask over the same packed row gives different log-probs on branch tokens."""
    model = tiny_causal_lm(vocab_size=97, seed=3)
    L = layout_tree(small_tree())
    batch = pack([L], [0])
    with torch.no_grad():
        tree = packed_forward(model, batch).logprobs
        causal_batch = replace(batch, subtree_end=torch.full_like(batch.subtree_end, batch.num_tokens))
        causal = packed_forward(model, causal_batch).logprobs  # plain causal
    # trained tokens 5 6 7 8 9; token 8 is predicted from token 3's row (identical under both masks), but
    # token 9 is predicted from token 8's row, which saw 4..7 under the causal mask
    assert torch.equal(tree[:4], causal[:4])
    assert (tree[4] - causal[4]).abs().item() > 1e-4


def test_attention_mode_mismatch_is_an_error() -> None:
    model = tiny_causal_lm(vocab_size=97)
    batch = pack([layout_tree(small_tree())], [0])
    with pytest.raises(ValueError, match="flex_attention"):
        packed_forward(model, batch, attention="flex")


def test_packed_logprobs_equal_per_path_tree() -> None:
    """Invariant (a) with the chunked tree attention (`tree_attention.py`)."""
    assert _check_packed_equals_paths("tree") < 1e-5


@pytest.mark.parametrize("chunk", [1, 3, 7, 64])
def test_tree_attention_plan_equals_dense_mask(chunk: int) -> None:
    """Each chunk's keys hold every key its rows may see, and its mask is the dense mask's slice."""
    rng = random.Random(1)
    layouts = [layout_tree(rollout_tree(rng, vocab=97, leaves=k, prefix=9)) for k in (1, 4, 6)]
    end = pack(layouts, [0, 1, 2]).subtree_end
    dense = tree_attention_mask(end)
    plan = plan_tree_attention(end, chunk)
    assert all(b == a for (_, b), (a, _) in pairwise(plan.bounds))
    assert plan.bounds[0][0] == 0 and plan.bounds[-1][1] == end.numel()
    for (a, b), keys, mask in zip(plan.bounds, plan.keys, plan.masks, strict=True):
        rebuilt = torch.zeros(b - a, end.numel(), dtype=torch.bool)
        rebuilt[:, keys] = mask  # keys: a slice or an index tensor
        assert torch.equal(rebuilt, dense[a:b])


def test_tree_attention_gradients_equal_dense() -> None:
    """Gradients of the packed loss through the chunked attention equal the dense SDPA ones."""
    rng = random.Random(2)
    batch = pack([layout_tree(rollout_tree(rng, vocab=97, leaves=5, prefix=20))], [0])
    grads = []
    for attention in ("sdpa", "tree"):
        model = tiny_causal_lm(vocab_size=97, seed=3)
        set_attention(model, attention)  # type: ignore[arg-type]
        packed_forward(model, batch, attention=attention).logprobs.sum().backward()  # type: ignore[arg-type]
        grads.append(torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None]))
    assert (grads[0] - grads[1]).abs().max().item() < 1e-5


@pytest.mark.slow
def test_packed_logprobs_equal_per_path_flex() -> None:
    """Invariant (a) with FlexAttention (compiles on CPU: ~50 s)."""
    assert _check_packed_equals_paths("flex") < 1e-5


def test_chunked_head_equals_unchunked_values_and_grads() -> None:
    from harnessrl.rl.forward import token_logprobs

    model = tiny_causal_lm(vocab_size=97, seed=4)
    rows = torch.randn(10, 64, generator=torch.Generator().manual_seed(0), requires_grad=True)
    targets = torch.arange(10) * 7
    full, ent_full = token_logprobs(model, rows, targets, temperature=0.7, entropy=True, chunk=1024)
    (g_full,) = torch.autograd.grad(full.sum(), rows)
    part, ent_part = token_logprobs(model, rows, targets, temperature=0.7, entropy=True, chunk=3)
    (g_part,) = torch.autograd.grad(part.sum(), rows)
    # Not bitwise: the BLAS kernel for a 3-row chunk may round differently from the 10-row one.
    assert (full - part).abs().max().item() < 1e-5  # a few float32 ulps at |x| ~ 4
    assert ent_full is not None and ent_part is not None
    assert (ent_full - ent_part).abs().max().item() < 1e-5
    assert (g_full - g_part).abs().max().item() < 1e-6


def shared_prompt_trees(seed: int = 0, vocab: int = 50) -> list[TreeSample]:
    """Trees of two prompts (A: 5 trees, B: 2) whose roots share 12 tokens, plus an exact duplicate."""
    rng = random.Random(seed)
    common = [rng.randrange(vocab) for _ in range(12)]
    prompts = [common + [rng.randrange(vocab) for _ in range(6)] for _ in range(2)]
    trees = []
    for i in range(7):
        t = rollout_tree(
            rng, vocab=vocab, leaves=1 + i % 3, prefix=18, rollout_id=f"r{i}", group_id=f"g{i % 2}"
        )
        t.nodes[0].tokens = list(prompts[0 if i < 5 else 1])
        trees.append(t)
    return [*trees, trees[0].model_copy(deep=True)]


def test_share_prefixes_is_exact_and_forwards_fewer_tokens() -> None:
    from harnessrl.rl.packing import share_prefixes

    trees = shared_prompt_trees()
    layouts = [layout_tree(t) for t in trees]
    tags = [torch.arange(L.num_tokens, dtype=torch.float32) + 1000.0 * i for i, L in enumerate(layouts)]
    forests, extras = share_prefixes(layouts, 10_000, {"tag": tags})
    assert len(forests) == 1
    (forest,) = forests
    # one token per distinct root-to-token prefix (trained tokens tagged by their tree): counted naively
    keys: set[tuple[tuple[int, int], ...]] = set()
    for i, L in enumerate(layouts):
        for path in L.path_tokens:
            prefix: tuple[tuple[int, int], ...] = ()
            for p in path.tolist():
                prefix = (*prefix, (int(L.input_ids[p]), i if bool(L.loss_mask[p]) else -1))
                keys.add(prefix)
    total = sum(L.num_tokens for L in layouts)
    assert forest.num_tokens == len(keys) <= total - 5 * 18 - 18 - 12  # A x6, B x2, A and B share 12
    assert forest.num_model_tokens == sum(L.num_model_tokens for L in layouts)
    assert sum(len(L.path_tokens) for L in layouts) == len(forest.path_tokens)
    model = tiny_causal_lm(vocab_size=50, seed=3)
    own = [packed_forward(model, pack([L], [0])).logprobs.detach() for L in layouts]
    out = packed_forward(model, pack(forests, [0], {"tag": extras["tag"]}))
    tag = extras["tag"][0][forest.loss_mask]
    worst = 0.0
    for lp, t in zip(out.logprobs.tolist(), tag.tolist(), strict=True):
        i, p = divmod(int(t), 1000)
        L = layouts[i]
        k = int(L.loss_mask[:p].sum())  # index of position p among tree i's trained tokens
        worst = max(worst, abs(lp - float(own[i][k])))
    assert worst < 1e-5
    # sampling log-probs travel with their tokens
    got = sorted(forest.rollout_logprobs[forest.loss_mask].tolist())
    assert got == sorted(torch.cat([L.rollout_logprobs[L.loss_mask] for L in layouts]).tolist())


def test_share_prefixes_respects_the_budget_and_keeps_big_trees_alone() -> None:
    from harnessrl.rl.packing import share_prefixes

    layouts = [layout_tree(t) for t in shared_prompt_trees(1)]
    biggest = max(L.num_tokens for L in layouts)
    forests, _ = share_prefixes(layouts, biggest, {})
    assert all(F.num_tokens <= biggest for F in forests) and len(forests) < len(layouts)
    assert sum(F.num_model_tokens for F in forests) == sum(L.num_model_tokens for L in layouts)
    alone, _ = share_prefixes(layouts, 1, {})
    assert sorted(F.num_tokens for F in alone) == sorted(L.num_tokens for L in layouts)
    with pytest.raises(ValueError, match="2 arrays for 8 trees"):
        share_prefixes(layouts, 100, {"adv": [torch.zeros(1)] * 2})
