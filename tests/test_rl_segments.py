"""Segments and tree-aware credit (`harnessrl.rl.credit`): exact numbers on hand-built trees.

- `train.segments = "exclude"` (the default) gives today's training batches bit for bit: the golden
  record was written by main's code before segments existed (`tests/batch_golden.py`).
- `train.advantage.mode = "tree"`: exact advantages on a 3-level group tree; plain GRPO, bit for bit,
  on groups whose rollouts share no sampled token; PPO's value target at a branch point.
- `outcome` and `credited`: which tokens train and with what advantage; the rollout weight rule.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
import torch
from batch_golden import CASES, batch_record, config, rollouts

from harnessrl.config import AdvantageConfig
from harnessrl.rl.advantages import grpo_advantages, ppo_advantages, rollout_token_weights
from harnessrl.rl.algo import build_algorithm, credit_differs
from harnessrl.rl.credit import tree_credit, weight_shares
from harnessrl.rl.packing import layout_tree
from harnessrl.types import SegmentInfo, TreeNode, TreeSample

GOLDEN = Path(__file__).parent / "fixtures" / "golden" / "exclude_batches.json"


def test_exclude_reproduces_the_batches_of_main_bit_for_bit() -> None:
    golden = json.loads(GOLDEN.read_text())
    assert sorted(golden) == sorted(CASES)
    for name, train in CASES.items():
        got = json.loads(json.dumps(batch_record(rollouts(), config(**train)), sort_keys=True))
        assert got == golden[name], name


def chain(rid: str, group: str, reward: float, *runs: tuple[list[int], str]) -> TreeSample:
    """One rollout as a single node: runs of (tokens, mask as e/m letters), concatenated."""
    tokens = [t for toks, _ in runs for t in toks]
    mask = [c == "m" for _, m in runs for c in m]
    node = TreeNode(
        node_id=0, parent=-1, tokens=tokens, model_mask=mask, logprobs=[-0.5 if m else 0.0 for m in mask]
    )
    return TreeSample(rollout_id=rid, group_id=group, reward=reward, nodes=[node], paths=[[0]])


def three_level_group() -> list[TreeSample]:
    """Prompt [1 2]; a, b, c sample 3 (d samples 9); a, b go on with [4 env, 5]; c with 6; then a: 7, b: 8.
    Rollout a also branches on its own after 5: a second path [10 11]."""
    a = chain("a", "g", 1.0, ([1, 2], "ee"), ([3], "m"), ([4, 5], "em"))
    a.nodes += [
        TreeNode(node_id=1, parent=0, tokens=[7], model_mask=[True], logprobs=[-0.5]),
        TreeNode(node_id=2, parent=0, tokens=[10, 11], model_mask=[True, True], logprobs=[-0.5, -0.5]),
    ]
    a.paths = [[0, 1], [0, 2]]
    return [
        a,
        chain("b", "g", 0.0, ([1, 2], "ee"), ([3], "m"), ([4, 5], "em"), ([8], "m")),
        chain("c", "g", 1.0, ([1, 2], "ee"), ([3], "m"), ([6], "m")),
        chain("d", "g", 0.0, ([1, 2], "ee"), ([9], "m")),
    ]


def trained(adv: torch.Tensor, layout_mask: torch.Tensor) -> list[float]:
    return adv[layout_mask].tolist()


def rows(expected: list[list[float]]) -> list[object]:
    """Row-wise pytest.approx (it compares flat sequences only)."""
    return [pytest.approx(r) for r in expected]


def test_tree_advantages_on_a_three_level_tree() -> None:
    """V(root) = 1/2; V(3) = 2/3 (a b c), V(9) = 0; V(5) = 1/2 (a b), V(6) = 1; V(7) = V(10) = 1, V(8) = 0.
    A = V(node) - V(branch point), / std 0.5: 3 -> 1/3, 9 -> -1, 5 -> -1/3, 6 -> 2/3, 7 -> 1, 8 -> -1;
    a's own branch (10 11) keeps a's credit below 5 (1), as 11 keeps 10's."""
    group = three_level_group()
    layouts = [layout_tree(s) for s in group]
    t = build_algorithm("grpo", AdvantageConfig(mode="tree", eps=0.0)).targets(group, layouts)
    got = [trained(a, L.loss_mask) for a, L in zip(t.advantages, layouts, strict=True)]
    assert got == rows([[1 / 3, -1 / 3, 1.0, 1.0, 1.0], [1 / 3, -1 / 3, -1.0], [1 / 3, 2 / 3], [-1.0]])
    # along every path the branch advantages add up to the rollout's GRPO advantage
    plain = grpo_advantages([s.reward for s in group], ["g"] * 4, eps=0.0)
    assert [sum(g[:3]) for g in got[:2]] == pytest.approx(plain[:2])
    assert [sum(got[2]), sum(got[3])] == pytest.approx(plain[2:])
    raw = build_algorithm("grpo", AdvantageConfig(mode="tree", normalize_std=False)).targets(group, layouts)
    assert trained(raw.advantages[0], layouts[0].loss_mask) == pytest.approx([1 / 6, -1 / 6, 0.5, 0.5, 0.5])


def test_ppo_value_target_at_branch_points() -> None:
    group = three_level_group()
    layouts = [layout_tree(s) for s in group]
    values = [torch.full((L.num_tokens,), 0.25) for L in layouts]
    t = build_algorithm("ppo", AdvantageConfig(mode="tree")).targets(group, layouts, values)
    assert t.returns is not None
    rets = [trained(r, L.loss_mask) for r, L in zip(t.returns, layouts, strict=True)]
    assert rets == rows([[2 / 3, 0.5, 1.0, 1.0, 1.0], [2 / 3, 0.5, 0.0], [2 / 3, 1.0], [0.0]])
    assert trained(t.advantages[0], layouts[0].loss_mask) == pytest.approx(
        [2 / 3 - 0.25, 0.25, 0.75, 0.75, 0.75]
    )
    with pytest.raises(ValueError, match="gamma = lam = 1"):
        build_algorithm("ppo", AdvantageConfig(mode="tree", gamma=0.9)).targets(group, layouts, values)


def unbranched_group(rng: random.Random, group: str, size: int, own_branches: bool) -> list[TreeSample]:
    """Rollouts sharing only the prompt: distinct first sampled token, then a chain of calls; with
    `own_branches` each rollout's tree also branches on its own (a moving tail)."""
    out = []
    for i in range(size):
        first = 1000 + 100 * i
        s = chain(
            f"{group}{i}", group, rng.choice([0.0, 0.25, 1.0]), ([1, 2, 3], "eee"), ([first, first + 1], "mm")
        )
        s.nodes.append(
            TreeNode(
                node_id=1, parent=0, tokens=[5, first + 2], model_mask=[False, True], logprobs=[0.0, -1.0]
            )
        )
        s.paths = [[0, 1]]
        if own_branches:
            s.nodes.append(
                TreeNode(
                    node_id=2, parent=0, tokens=[6, first + 3], model_mask=[False, True], logprobs=[0.0, -1.0]
                )
            )
            s.paths.append([0, 2])
        out.append(s)
    return out


@pytest.mark.parametrize("own_branches", [False, True])
@pytest.mark.parametrize("normalize_std", [True, False])
def test_tree_equals_grpo_without_branching_between_rollouts(own_branches: bool, normalize_std: bool) -> None:
    rng = random.Random(5)
    samples = [s for g in "xyz" for s in unbranched_group(rng, g, 4, own_branches)]
    layouts = [layout_tree(s) for s in samples]
    cfg = dict(normalize_std=normalize_std)
    plain = build_algorithm("grpo", AdvantageConfig(**cfg)).targets(samples, layouts)
    tree = build_algorithm("grpo", AdvantageConfig(mode="tree", **cfg)).targets(samples, layouts)
    assert not plain.all_zero
    for a, b in zip(plain.advantages, tree.advantages, strict=True):
        assert torch.equal(a, b)
    values = [torch.linspace(-1, 1, L.num_tokens) for L in layouts]
    ppo = build_algorithm("ppo").targets(samples, layouts, values)
    ppo_tree = build_algorithm("ppo", AdvantageConfig(mode="tree")).targets(samples, layouts, values)
    assert ppo.returns is not None and ppo_tree.returns is not None
    for x, y in zip(ppo.advantages + ppo.returns, ppo_tree.advantages + ppo_tree.returns, strict=True):
        assert torch.allclose(x, y, atol=1e-6)


def test_tree_credit_counts_a_rollout_once_per_node() -> None:
    a = three_level_group()[0]  # two paths through the shared nodes
    (credit,) = tree_credit([1.0], [layout_tree(a)])
    assert credit.value[layout_tree(a).loss_mask].tolist() == [1.0] * 5
    assert credit.advantage.abs().sum() == 0.0  # one rollout: everything is its own baseline


def segmented(
    rid: str, reward: float, segments: list[SegmentInfo], extra: list[tuple[list[int], int]]
) -> TreeSample:
    """A main chain [prompt 1 2 | m 30+k | env 5 | m 40+k] (calls m-<rid> then n-<rid>) plus, per
    (tokens, segment) in `extra`, a root holding its own segment's tokens (all model but the first)."""
    k = {"r0": 0, "r1": 1, "r2": 2}[rid]
    nodes = [
        TreeNode(
            node_id=0,
            parent=-1,
            tokens=[1, 2, 30 + k],
            model_mask=[False, False, True],
            logprobs=[0, 0, -1.0],
            call_ids=[f"m-{rid}"],
        ),
        TreeNode(
            node_id=1,
            parent=0,
            tokens=[5, 40 + k],
            model_mask=[False, True],
            logprobs=[0, -1.0],
            call_ids=[f"n-{rid}"],
        ),
    ]
    for toks, seg in extra:
        mask = [False] + [True] * (len(toks) - 1)
        nodes.append(
            TreeNode(
                node_id=len(nodes),
                parent=-1,
                tokens=toks,
                model_mask=mask,
                logprobs=[0.0] * len(toks),
                segment=seg,
            )
        )
    paths = [[0, 1]] + [[n] for n in range(2, len(nodes))]
    return TreeSample(
        rollout_id=rid, group_id="g", reward=reward, nodes=nodes, paths=paths, segments=segments
    )


def segment_group() -> list[TreeSample]:
    """r0 (reward 1): a sub-agent whose answer was used and a summary; r1 (0): a summary; r2 (0): a
    sub-agent whose answer was not used."""

    def sub(rid: str, used: bool) -> SegmentInfo:
        return SegmentInfo(
            kind="subagent", parent=0, origin_call=f"m-{rid}", answer_call=f"n-{rid}", used=used
        )

    def summary(origin: str, answer: str | None) -> SegmentInfo:
        return SegmentInfo(kind="compaction", parent=0, origin_call=origin, answer_call=answer, used=True)

    main = SegmentInfo(kind="main")
    return [
        segmented(
            "r0", 1.0, [main, sub("r0", True), summary("n-r0", None)], [([8, 81, 82], 1), ([9, 91], 2)]
        ),
        segmented("r1", 0.0, [main, summary("m-r1", "n-r1")], [([9, 92, 93], 1)]),
        segmented("r2", 0.0, [main, sub("r2", False)], [([8, 83], 1)]),
    ]


def test_outcome_and_credited_advantages() -> None:
    """GRPO over rewards 1 0 0 (eps 0): A = sqrt 2, -1/sqrt 2, -1/sqrt 2. outcome: every token gets
    its rollout's A. credited: r0's sub-agent (answer used) gets its parent's A; r2's (answer not
    used) 0; the two used compactions (r0: 1, r1: 0) are each other's baseline: +1 and -1."""
    group = segment_group()
    layouts = [layout_tree(s) for s in group]
    hi, lo = 2**0.5, -(0.5**0.5)
    outcome = build_algorithm("grpo", AdvantageConfig(eps=0.0), "outcome").targets(group, layouts)
    assert [trained(a, L.loss_mask) for a, L in zip(outcome.advantages, layouts, strict=True)] == rows(
        [[hi] * 5, [lo] * 4, [lo] * 3]
    )
    credited = build_algorithm("grpo", AdvantageConfig(eps=0.0), "credited").targets(group, layouts)
    assert [trained(a, L.loss_mask) for a, L in zip(credited.advantages, layouts, strict=True)] == rows(
        [[hi, hi, hi, hi, 1.0], [lo, lo, -1.0, -1.0], [lo, lo, 0.0]]
    )


def test_the_compaction_baseline_counts_each_rollout_once() -> None:
    """One rollout that compacted twice is no baseline for itself (it was: its two summaries made the
    group's "two compactions", std 0, credit 0); with a peer, the mean is over rollouts, not summaries."""
    group = segment_group()
    r0 = group[0]
    r0.segments.append(
        SegmentInfo(kind="compaction", parent=0, origin_call="m-r0", answer_call=None, used=True)
    )
    r0.nodes.append(TreeNode(node_id=len(r0.nodes), parent=-1, tokens=[9, 94], model_mask=[False, True],
                             logprobs=[0.0, 0.0], segment=3))  # fmt: skip
    r0.paths.append([len(r0.nodes) - 1])
    group[1].segments[1].used = False  # r0 is the only rollout with a used summary
    layouts = [layout_tree(s) for s in group]
    credited = build_algorithm("grpo", AdvantageConfig(eps=0.0), "credited").targets(group, layouts)
    # no baseline of its own kind: both summaries take r0's rollout advantage sqrt 2
    assert trained(credited.advantages[0], layouts[0].loss_mask)[-2:] == pytest.approx([2**0.5] * 2)
    group[1].segments[1].used = True  # r1 (reward 0) with one summary, r0 (reward 1) with two
    credited = build_algorithm("grpo", AdvantageConfig(eps=0.0), "credited").targets(group, layouts)
    # over rollouts: mean 0.5, std 0.5 -> +1 and -1 (over summaries it was mean 2/3: +0.71, -1.41)
    assert trained(credited.advantages[0], layouts[0].loss_mask)[-2:] == pytest.approx([1.0, 1.0])
    assert trained(credited.advantages[1], layouts[1].loss_mask)[2:] == pytest.approx([-1.0, -1.0])


def test_credited_compaction_without_a_peer_takes_the_step_that_resumed_on_it() -> None:
    group = segment_group()
    group[1].segments[1].used = False  # r1's summary was never read: 0, and no baseline for r0's
    layouts = [layout_tree(s) for s in group]
    tree = build_algorithm("grpo", AdvantageConfig(eps=0.0, mode="tree"), "credited").targets(group, layouts)
    got = trained(tree.advantages[0], layouts[0].loss_mask)
    # r0's compaction resumed nowhere (answer_call None): its rollout's advantage
    assert got == pytest.approx([2**0.5] * 5)
    assert trained(tree.advantages[1], layouts[1].loss_mask)[2:] == [0.0, 0.0]


def test_ppo_credited_returns_zero_for_unused_segments() -> None:
    group = segment_group()
    layouts = [layout_tree(s) for s in group]
    values = [torch.zeros(L.num_tokens) for L in layouts]
    t = build_algorithm("ppo", None, "credited").targets(group, layouts, values)
    assert t.returns is not None
    assert trained(t.returns[2], layouts[2].loss_mask) == [0.0, 0.0, 0.0]  # r2: reward 0 anyway
    group[0].segments[1].used = False
    t = build_algorithm("ppo", None, "credited").targets(group, layouts, values)
    assert trained(t.returns[0], layouts[0].loss_mask) == [1.0, 1.0, 0.0, 0.0, 1.0]
    tree = build_algorithm("ppo", AdvantageConfig(mode="tree"), "credited").targets(group, layouts, values)
    assert tree.returns is not None
    assert trained(tree.returns[0], layouts[0].loss_mask) == [1.0, 1.0, 0.0, 0.0, 1.0]
    assert ppo_advantages(layouts[0], values[0], [1.0, 1.0, 1.0])[1].max() == 1.0


def test_ppo_an_unused_summary_does_not_zero_the_main_steps_it_extends() -> None:
    """A compaction request extends the main thread: its path holds the main tokens before it. Its
    summary unused, the summary's tokens return 0 and the main tokens keep R (they returned 0 when the
    path's reward was set by its leaf)."""
    main, summary = SegmentInfo(kind="main"), SegmentInfo(kind="compaction", parent=0, used=False)
    nodes = [
        TreeNode(node_id=0, parent=-1, tokens=[1, 2, 30, 31], model_mask=[False, False, True, True],
                 logprobs=[0, 0, -1.0, -1.0], call_ids=["m"]),
        TreeNode(node_id=1, parent=0, tokens=[7, 70, 71], model_mask=[False, True, True],
                 logprobs=[0, -1.0, -1.0], call_ids=["c"], segment=1),
    ]  # fmt: skip
    sample = TreeSample(rollout_id="r", group_id="g", reward=1.0, nodes=nodes, paths=[[0, 1]],
                        segments=[main, summary])  # fmt: skip
    layout = layout_tree(sample)
    values = [torch.zeros(layout.num_tokens)]
    for cfg in (AdvantageConfig(), AdvantageConfig(gamma=0.9, lam=0.95)):
        t = build_algorithm("ppo", cfg, "credited").targets([sample], [layout], values)
        assert t.returns is not None
        got = trained(t.returns[0], layout.loss_mask)
        assert got[2:] == [0.0, 0.0] and all(r > 0 for r in got[:2]), (cfg, got)


def test_weight_shares_by_segment_kind_and_zero_advantage() -> None:
    """segment_group: r0 trains 5 tokens (main 2, sub-agent 2, summary 1), r1 4 (main 2, summary 2),
    r2 3 (main 2, sub-agent 1); each rollout weighs 1/3, spread over its own tokens."""
    group = segment_group()
    layouts = [layout_tree(s) for s in group]
    credited = build_algorithm("grpo", AdvantageConfig(eps=0.0), "credited").targets(group, layouts)
    shares = weight_shares(group, layouts, credited.advantages)
    third = 1 / 3
    assert shares["weight/main"] == pytest.approx(round(third * (2 / 5 + 2 / 4 + 2 / 3), 6))
    assert shares["weight/subagent"] == pytest.approx(round(third * (2 / 5 + 1 / 3), 6))
    assert shares["weight/compaction"] == pytest.approx(round(third * (1 / 5 + 2 / 4), 6))
    assert sum(v for k, v in shares.items() if k != "weight/zero_advantage") == pytest.approx(1.0, abs=1e-5)
    assert shares["weight/zero_advantage"] == pytest.approx(round(third / 3, 6))  # r2's unused sub-agent


def test_a_rollouts_weight_does_not_grow_with_its_segments() -> None:
    group = segment_group()  # 2, 1 and 1 segments besides the main trajectory
    layouts = [layout_tree(s) for s in group]
    for w in rollout_token_weights(layouts):
        assert float(w.sum()) == pytest.approx(1 / 3, abs=1e-7)


def test_outcome_and_credited_train_the_segments_of_traced_rollouts() -> None:
    """Through the loop's own stages: `outcome` trains the compaction and sub-agent calls that
    `exclude` drops; `credited` trains the same tokens with other advantages on them."""
    base = batch_record(rollouts(), config())
    outcome = batch_record(rollouts(), config(segments="outcome"))
    logged: dict[str, float] = {}
    credited = batch_record(rollouts(), config(segments="credited"), logged)

    def tokens(rec: dict[str, object]) -> int:
        return sum(sum(m["loss_mask"]) for m in rec["micro"])  # type: ignore[attr-defined,index]

    assert tokens(base) < tokens(outcome) == tokens(credited)
    assert outcome["micro"] != credited["micro"]
    assert [m["input_ids"] for m in outcome["micro"]] == [m["input_ids"] for m in credited["micro"]]
    assert 0.0 < logged["weight/credit_differs"] < 1.0  # the step says how far credit moved it


def test_credit_differs_is_the_weight_on_tokens_credit_moved() -> None:
    """segment_group: credited moves r0's summary (1 of its 5 tokens), r1's summary (2 of 4) and
    r2's unused sub-agent (1 of 3); each rollout weighs 1/3. Two rollouts that both compacted and
    used every segment: the summaries' baseline is the group's, nothing moves."""
    group = segment_group()
    layouts = [layout_tree(s) for s in group]
    cfg = AdvantageConfig(eps=0.0)
    credited = build_algorithm("grpo", cfg, "credited").targets(group, layouts)
    got = credit_differs("grpo", cfg, group, layouts, None, credited.advantages)
    assert got == pytest.approx(round((1 / 5 + 2 / 4 + 1 / 3) / 3, 6))
    both = group[:2]
    credited = build_algorithm("grpo", cfg, "credited").targets(both, layouts[:2])
    assert credit_differs("grpo", cfg, both, layouts[:2], None, credited.advantages) == 0.0


def test_the_experiment_config_differs_only_in_credit(tmp_path: Path) -> None:
    """configs/credit.toml (`scripts/harness_transfer -c configs/credit.toml`): arms through one
    white-box configuration that delegates and compacts, the same budget, differing only in
    `train.segments` and `train.advantage.mode`, and the second design's two arms (`-300`) in the
    compaction threshold too; multi-step families, 60 held-out instances, two seeds, the policies also
    evaluated through Claude Code (on 5 tasks per family)."""
    from harnessrl.config import load_config
    from harnessrl.experiments.transfer import arm_config, check
    from harnessrl.tasks.generate import MULTI_STEP_FAMILIES

    cfg = load_config(Path(__file__).parents[1] / "configs" / "credit.toml", [])
    check(cfg)
    w = "whitebox:00020"
    assert all(hs == [w] for hs in cfg.transfer.arms.values())
    trains = {a: arm_config(cfg, a, 0, "m", tmp_path / a).train for a in cfg.transfer.arms}
    assert {
        a: (t.segments, t.advantage.mode, t.harness_options[w]["compact_tokens"]) for a, t in trains.items()
    } == {
        "exclude": ("exclude", "rollout", 200),
        "outcome": ("outcome", "rollout", 200),
        "credited": ("credited", "rollout", 200),
        "credited-tree": ("credited", "tree", 200),
        "credited-300": ("credited", "rollout", 300),
        "outcome-300": ("outcome", "rollout", 300),
    }
    rest = {a: t.model_dump(exclude={"segments", "advantage", "out_dir"}) for a, t in trains.items()}
    for r in rest.values():
        r["harness_options"][w].pop("compact_tokens")
    assert all(r == rest["exclude"] for r in rest.values())  # same budget, same everything else
    opts = cfg.train.harness_options[w]
    assert opts["subagents"] is True and opts["compact_tokens"] <= 500
    assert set(MULTI_STEP_FAMILIES) <= set(cfg.transfer.families)
    assert cfg.transfer.heldout_per_family * len(cfg.transfer.families) >= 60
    assert len(cfg.transfer.seeds) == 2 and cfg.transfer.eval_harnesses == [w, "claude-code"]
    assert cfg.eval.harness_options["claude-code"]["bare"] is True and cfg.eval.per_category == {
        "claude-code": 5
    }
