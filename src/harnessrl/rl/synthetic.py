"""Synthetic TreeSamples shaped like agent rollouts, for tests and the packing benchmark.

A rollout tree here is a root (system prompt + tools + user query: environment tokens) followed by
turns; each turn node is one model call's new tokens: environment tokens (a tool result) followed by the
model's output tokens. The first leaf is a straight trajectory of `turns` turns; every further leaf
branches off a node in the later half of an existing path (a retry regenerating the last calls, a
re-rendered history, a sub-agent sharing the prompt prefix) and continues with `branch_turns` turns of
its own, so most tokens sit in a long shared prefix, as in real agent rollouts. Log-probs are
arbitrary negative numbers: nothing here is sampled from a model.
"""

from __future__ import annotations

import random

from harnessrl.types import TreeNode, TreeSample


def _turn(
    rng: random.Random, vocab: int, env: tuple[int, int], out: tuple[int, int]
) -> tuple[list[int], list[bool]]:
    n_env = rng.randint(*env)
    n_out = rng.randint(*out)
    tokens = [rng.randrange(vocab) for _ in range(n_env + n_out)]
    return tokens, [False] * n_env + [True] * n_out


def rollout_tree(
    rng: random.Random,
    *,
    vocab: int,
    leaves: int,
    prefix: int = 64,
    turns: tuple[int, int] = (2, 5),
    branch_turns: tuple[int, int] | None = None,
    env_tokens: tuple[int, int] = (4, 24),
    out_tokens: tuple[int, int] = (4, 24),
    rollout_id: str = "r0",
    group_id: str = "g0",
    reward: float = 0.0,
) -> TreeSample:
    """A random rollout-shaped tree with exactly `leaves` kept root-to-leaf paths.

    `turns` / `branch_turns` bound the turns of the first trajectory / of each branch (default: same)."""
    nodes: list[TreeNode] = [
        TreeNode(
            node_id=0,
            parent=-1,
            tokens=[rng.randrange(vocab) for _ in range(prefix)],
            model_mask=[False] * prefix,
            logprobs=[0.0] * prefix,
        )
    ]

    def add(parent: int) -> int:
        tokens, mask = _turn(rng, vocab, env_tokens, out_tokens)
        lps = [-rng.uniform(0.01, 3.0) if m else 0.0 for m in mask]
        nodes.append(
            TreeNode(
                node_id=len(nodes),
                parent=parent,
                tokens=tokens,
                model_mask=mask,
                logprobs=lps,
                call_ids=[f"c{len(nodes)}"],
            )
        )
        return len(nodes) - 1

    paths: list[list[int]] = []
    for leaf in range(leaves):
        if leaf == 0:
            path, span = [0], turns
        else:  # branch off a node in the later half of an existing path (never off its leaf)
            base = rng.choice(paths)
            path, span = base[: rng.randrange(max(1, len(base) // 2), len(base))], branch_turns or turns
        for _ in range(rng.randint(*span)):
            path.append(add(path[-1]))
        paths.append(path)
    return TreeSample(rollout_id=rollout_id, group_id=group_id, reward=reward, nodes=nodes, paths=paths)


def call_token_counts(sample: TreeSample) -> list[int]:
    """Length of each model call's full sequence (prompt + output): one call per non-root node."""
    depth_end: dict[int, int] = {}
    counts: list[int] = []
    for i, node in enumerate(sample.nodes):
        depth_end[i] = (0 if node.parent == -1 else depth_end[node.parent]) + len(node.tokens)
        if node.parent != -1:
            counts.append(depth_end[i])
    return counts
