"""RL math on prefix trees; knows nothing about where trajectories came from.

- `packing`: lay out each tree's unique tokens once (depth-first), tree attention mask, first-fit rows
- `forward`: a causal LM's forward over packed rows (SDPA / FlexAttention / chunked tree attention),
  per-path reference
- `tree_attention`: the chunked tree attention (each chunk of rows against its ancestor keys only)
- `advantages`: GRPO per (task, harness) group, per-branch GAE for PPO, per-token rollout weights
- `credit`: tree-aware advantages over a group's merged tree; compaction and sub-agent segment credit
- `losses`: clipped policy gradient x truncated IS weight, k3 KL, clipped value loss, mismatch metrics
- `algo`: the algorithm registry (GRPO, PPO): TreeSamples -> per-token arrays for the trainer
- `synthetic`: rollout-shaped random trees for tests and benchmarks
"""
