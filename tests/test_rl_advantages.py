"""GRPO and per-branch PPO advantages: invariants (e) groups never mix, (f) no crossing of branch points."""

from __future__ import annotations

import pytest
import torch

from harnessrl.rl.advantages import (
    broadcast,
    gae,
    grpo_advantages,
    ppo_advantages,
    rollout_token_weights,
)
from harnessrl.rl.packing import layout_tree
from harnessrl.types import TreeNode, TreeSample, group_id


def two_branch_tree() -> TreeSample:
    """root [1 2 env, 3 model]; A = [4 env, 5 6 model]; B = [7 env, 8 model], both under root."""
    nodes = [
        TreeNode(
            node_id=0, parent=-1, tokens=[1, 2, 3], model_mask=[False, False, True], logprobs=[0, 0, -1.0]
        ),
        TreeNode(
            node_id=1, parent=0, tokens=[4, 5, 6], model_mask=[False, True, True], logprobs=[0, -1.0, -1.0]
        ),
        TreeNode(node_id=2, parent=0, tokens=[7, 8], model_mask=[False, True], logprobs=[0, -1.0]),
    ]
    return TreeSample(rollout_id="r", group_id="g", reward=1.0, nodes=nodes, paths=[[0, 1], [0, 2]])


def test_grpo_exact_values_per_group() -> None:
    rewards = [1.0, 0.0, 1.0, 1.0, 0.5, 0.0]
    groups = ["a", "a", "b", "b", "c", "c"]
    adv = grpo_advantages(rewards, groups, eps=0.0)
    assert adv == pytest.approx([1.0, -1.0, 0.0, 0.0, 1.0, -1.0], abs=1e-12)
    raw = grpo_advantages(rewards, groups, normalize_std=False)
    assert raw == pytest.approx([0.5, -0.5, 0.0, 0.0, 0.25, -0.25], abs=1e-12)


def test_grpo_groups_never_mix_harnesses() -> None:
    """Invariant (e): same task, two harness configurations -> two groups, each with its own baseline."""
    keys = [group_id("t1", "claude-code")] * 2 + [group_id("t1", "codex")] * 2
    assert keys[0] != keys[2]
    adv = grpo_advantages([1.0, 0.0, 0.0, 0.0], keys, eps=0.0)
    # mixing would give baseline 0.25 for everyone; separately the codex pair has zero advantage
    assert adv == pytest.approx([1.0, -1.0, 0.0, 0.0], abs=1e-12)
    # changing one group's rewards leaves the other group's advantages bit-identical
    adv2 = grpo_advantages([1.0, 0.0, 7.0, 3.0], keys, eps=0.0)
    assert adv2[:2] == adv[:2]


def test_broadcast_and_weights() -> None:
    L = layout_tree(two_branch_tree())
    assert broadcast(L, 0.5).tolist() == [0, 0, 0.5, 0, 0.5, 0.5, 0, 0.5]
    w = rollout_token_weights([L, L])
    assert w[0].tolist() == pytest.approx([0, 0, 0.125, 0, 0.125, 0.125, 0, 0.125])


def test_gae_gamma_lambda_one_is_reward_minus_value() -> None:
    v = torch.tensor([0.1, 0.4, -0.3])
    r = torch.tensor([0.0, 0.0, 2.0])
    assert gae(r, v).tolist() == pytest.approx([1.9, 1.6, 2.3])
    assert gae(r, v, gamma=0.5, lam=1.0).tolist() == pytest.approx([0.4, 0.6, 2.3])  # by hand


def test_ppo_advantages_do_not_cross_branch_points() -> None:
    """Invariant (f): a branch's advantages depend on its own reward only; shared tokens get the mean."""
    L = layout_tree(two_branch_tree())
    # layout: [1 2 3 | 4 5 6 | 7 8]; trained positions 2, 4, 5, 7
    values = torch.tensor([0.0, 0.0, 0.2, 0.0, 0.3, 0.4, 0.0, 0.5])
    adv, ret = ppo_advantages(L, values, [1.0, 0.0])
    assert adv.tolist() == pytest.approx([0, 0, 0.5 - 0.2, 0, 1 - 0.3, 1 - 0.4, 0, 0 - 0.5])
    assert ret.tolist() == pytest.approx([0, 0, 0.5, 0, 1.0, 1.0, 0, 0.0])
    adv2, _ = ppo_advantages(L, values, [1.0, 5.0])  # change only branch B's reward
    assert torch.equal(adv2[3:7], adv[3:7])  # branch A untouched
    assert adv2[7].item() == pytest.approx(5.0 - 0.5)
    assert adv2[2].item() == pytest.approx(3.0 - 0.2)  # shared token: mean of the two branch returns
    with pytest.raises(ValueError):
        ppo_advantages(L, values, [1.0])


def test_grpo_and_ppo_targets_from_samples() -> None:
    from harnessrl.config import AdvantageConfig, TrainConfig
    from harnessrl.rl.algo import ALGORITHMS, build_algorithm
    from harnessrl.rl.config import ALGORITHM_NAMES, AlgorithmName

    a = two_branch_tree()
    b = two_branch_tree()
    b.rollout_id, b.reward = "r2", 0.0
    layouts = [layout_tree(a), layout_tree(b)]
    t = build_algorithm("grpo", AdvantageConfig(eps=0.0)).targets([a, b], layouts)
    assert t.returns is None and not t.all_zero
    assert t.advantages[0].tolist() == [0, 0, 1.0, 0, 1.0, 1.0, 0, 1.0]
    assert t.advantages[1].tolist() == [0, 0, -1.0, 0, -1.0, -1.0, 0, -1.0]
    values = [torch.full((8,), 0.25), torch.zeros(8)]
    ppo = build_algorithm("ppo")
    p = ppo.targets([a, b], layouts, values)
    assert p.advantages[0].tolist() == [0, 0, 0.75, 0, 0.75, 0.75, 0, 0.75]
    assert p.returns is not None and p.returns[1].tolist() == [0.0] * 8
    with pytest.raises(ValueError, match="needs the value model"):
        ppo.targets([a, b], layouts)
    with pytest.raises(ValueError, match="unknown algorithm"):
        build_algorithm("reinforce")
    # The config's literal is the torch-free list of names, which names exactly the registry.
    assert TrainConfig.model_fields["algorithm"].annotation == AlgorithmName
    assert tuple(ALGORITHMS) == ALGORITHM_NAMES == ("grpo", "ppo")
    assert all(cls.name == name for name, cls in ALGORITHMS.items())


def test_grpo_groups_are_separate_and_equal_rewards_give_zero() -> None:
    from harnessrl.rl.algo import build_algorithm

    trees = [two_branch_tree() for _ in range(4)]
    for i, (tree, gid, reward) in enumerate(
        zip(trees, ["t/a", "t/a", "t/b", "t/b"], [1.0, 1.0, 0.0, 1.0], strict=True)
    ):
        tree.rollout_id, tree.group_id, tree.reward = f"r{i}", gid, reward
    t = build_algorithm("grpo").targets(trees, [layout_tree(s) for s in trees])
    assert [float(a.max() + a.min()) for a in t.advantages[:2]] == [0.0, 0.0]  # equal rewards: no signal
    assert float(t.advantages[3].max()) == pytest.approx(1.0, abs=1e-5)
    assert build_algorithm("grpo").targets(trees[:2], [layout_tree(s) for s in trees[:2]]).all_zero


def test_rollout_weight_does_not_grow_with_branches() -> None:
    """Each tree's token weights sum to exactly 1/N, whether it has 1 leaf or 8 (shared tokens once)."""
    import random

    from harnessrl.rl.synthetic import rollout_tree

    rng = random.Random(3)
    layouts = [layout_tree(rollout_tree(rng, vocab=30, leaves=k, prefix=5)) for k in (1, 8, 3)]
    assert len(layouts[1].path_tokens) == 8
    for w, L in zip(rollout_token_weights(layouts), layouts, strict=True):
        assert float(w.sum()) == pytest.approx(1 / 3, abs=1e-6)
        assert int((w > 0).sum()) == L.num_model_tokens
