"""Tree packing vs. path-by-path vs. call-by-call: forward+backward time and tokens processed.

    .venv/bin/python benchmarks/packing.py     # default: under a minute of CPU
    .venv/bin/python benchmarks/packing.py --leaves 8 16 --prefix 1024 --hidden 256
    .venv/bin/python benchmarks/packing.py --leaves 4 8 --model CHECKPOINT_FOLDER   # e.g. SmolLM2-135M

Measured on the shared 2-core dev box (CPU seconds, one thread), 2026-12-03, idle, best of 5: paths/tree
3.41x / 5.52x / 7.95x / 11.42x at 4/8/16/32 leaves with the chunked tree attention (101% / 96% / 93% /
87% of the token ratio; at 32 the tiny model is mostly attention, bounded by the pair ratio), 2.68x /
4.27x / 5.28x / 6.84x with the dense mask. 2026-12-02, load 1.7-2.8, two runs: tiny default model,
4/8/16/32 leaves: paths/tree 2.93-3.43x / 5.36-5.48x / 7.42-8.21x / 11.43-13.32x with the chunked tree
attention (87-102% of the token ratio; ~10% run-to-run noise), 2.63-2.88x / 3.99-4.33x / 5.22-5.91x /
6.45-7.19x with the dense mask in the same runs. Earlier, dense only: SmolLM2-135M, 4/8 leaves:
paths/tree 3.50x / 4.58x, calls/tree 8.95x / 9.50x (about 6 minutes).

Trees are shaped like agent rollouts (`harnessrl.rl.synthetic.rollout_tree`): a long shared prefix
(system prompt, tools, task), then turns of tool output + model output, with further leaves branching
off earlier turns (retries, re-rendered histories, sub-agents sharing the prompt). For each tree:

- dense: one packed forward+backward of the unique tokens, SDPA with the dense [T, T] tree mask (the
  baseline: it pays for every masked pair);
- tree:  the same with the chunked tree attention (`harnessrl.rl.tree_attention`: each chunk of query
  rows against only its ancestor keys); "of ratio" is paths/tree over the token ratio path tok/unique;
  "pair ratio" is the same ratio for attention (query, key) pairs, lower than the token ratio (a
  path's shared prefix tokens attend few keys): no exact attention beats it, so on a model whose time
  is mostly attention (the tiny default) paths/tree stays between the two ratios;
- paths: one forward+backward per kept root-to-leaf path (shared tokens recomputed per path);
- calls: one forward+backward per model call's full sequence (prompt + output), i.e. what training on
  the captured calls without prefix merging would process.

The loss is the sum of the trained tokens' log-probs (its value does not matter for timing). Times are
process CPU seconds, best of `--repeats` runs, one torch thread by default (one model warm-up
forward+backward before everything).
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable
from typing import Any

import torch

from harnessrl.rl.forward import Attention, packed_forward, set_attention, token_logprobs
from harnessrl.rl.packing import TreeLayout, layout_tree, pack
from harnessrl.rl.synthetic import call_token_counts, rollout_tree
from harnessrl.train.causal_lm import load_causal_lm, tiny_causal_lm
from harnessrl.types import TreeSample


def best_time(fn: Callable[[], None], repeats: int) -> float:
    """Best CPU seconds of this process over `repeats` runs (CPU time, not wall time: on a shared
    machine other processes' load would otherwise swamp the comparison)."""
    times = []
    for _ in range(repeats):
        t = time.process_time()
        fn()
        times.append(time.process_time() - t)
    return min(times)


def model_args(ap: argparse.ArgumentParser, *, hidden: int, layers: int, vocab: int, threads: int) -> None:
    """The options this benchmark and `train_step.py` share: the tiny random Qwen3's size (when no
    `--model` is given), `--repeats` (the best of how many runs), torch `--threads` and the `--seed`."""
    ap.add_argument("--hidden", type=int, default=hidden)
    ap.add_argument("--layers", type=int, default=layers)
    ap.add_argument("--vocab", type=int, default=vocab)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--threads", type=int, default=threads)
    ap.add_argument("--seed", type=int, default=0)


def pair_ratio(layout: TreeLayout) -> float:
    """Attention (query, key) pairs path by path (causal: L(L+1)/2 a path) over those of the tree
    (each token attends its depth + 1 ancestors): the bound on the attention part's speed-up."""
    paths = sum(len(t) * (len(t) + 1) // 2 for t in layout.path_tokens)
    return paths / float((layout.position_ids + 1).sum())


def run_tree(model: Any, layout: TreeLayout, attention: Attention = "sdpa") -> None:
    set_attention(model, attention)
    model.zero_grad(set_to_none=True)
    packed_forward(model, pack([layout], [0]), attention=attention).logprobs.sum().backward()
    set_attention(model, "sdpa")


def causal_step(model: Any, ids: list[int], trained: list[bool]) -> None:
    """Forward+backward of one plain causal sequence; the LM head runs only on rows predicting a trained
    token, as in the packed forward (so the comparison is about packing, not about the head)."""
    seq = torch.tensor([ids])
    hidden = model.get_decoder()(input_ids=seq, use_cache=False).last_hidden_state[0]
    pos = torch.tensor([i for i, t in enumerate(trained) if t and i > 0], dtype=torch.long)
    logp, _ = token_logprobs(model, hidden[pos - 1], seq[0, pos])
    logp.sum().backward()


def run_paths(model: Any, layout: TreeLayout) -> None:
    model.zero_grad(set_to_none=True)
    for toks in layout.path_tokens:
        causal_step(model, layout.input_ids[toks].tolist(), layout.loss_mask[toks].tolist())


def run_calls(model: Any, sample: TreeSample) -> None:
    """Each call: its whole prompt + output; only its own output tokens are trained."""
    model.zero_grad(set_to_none=True)
    ids: dict[int, list[int]] = {}
    for i, node in enumerate(sample.nodes):
        prev = ids[node.parent] if node.parent >= 0 else []
        ids[i] = prev + node.tokens
        if node.parent >= 0:
            causal_step(model, ids[i], [False] * len(prev) + list(node.model_mask))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--leaves", type=int, nargs="+", default=[4, 8, 16, 32])
    ap.add_argument("--prefix", type=int, default=512, help="shared prefix tokens (system prompt, tools)")
    ap.add_argument("--turn-tokens", type=int, nargs=2, default=[4, 16], help="min/max tool and model tokens")
    model_args(ap, hidden=128, layers=2, vocab=1024, threads=1)
    ap.add_argument(
        "--model", default=None, help="a local HF checkpoint folder instead of a tiny random model"
    )
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    if args.model:
        model = load_causal_lm(args.model)
        args.vocab = model.config.vocab_size
        print(f"model: {args.model}; prefix {args.prefix}")
    else:
        model = tiny_causal_lm(
            vocab_size=args.vocab, hidden_size=args.hidden, layers=args.layers, max_positions=16384
        )
        print(f"model: Qwen3 {args.layers} layers, hidden {args.hidden}, vocab {args.vocab}", end="")
        print(f"; prefix {args.prefix}")
    print(
        f"{'leaves':>6} {'unique':>7} {'path tok':>8} {'call tok':>8} | {'dense':>7} {'tree':>7} {'paths':>7}"
        f" {'calls':>7} | {'paths/dense':>11} {'paths/tree':>10} {'of ratio':>8} {'calls/tree':>10}"
        f" {'pair ratio':>10}"
    )
    rng = random.Random(args.seed)
    span = (args.turn_tokens[0], args.turn_tokens[1])
    for leaves in args.leaves:
        sample = rollout_tree(
            rng,
            vocab=args.vocab,
            leaves=leaves,
            prefix=args.prefix,
            turns=(4, 8),
            branch_turns=(1, 2),
            env_tokens=span,
            out_tokens=span,
        )
        layout = layout_tree(sample)
        kept = {n for path in sample.paths for n in path}
        unique = sum(len(sample.nodes[n].tokens) for n in kept)
        assert layout.num_tokens == unique, "packing must process exactly the unique tokens"
        path_tok = sum(len(t) for t in layout.path_tokens)
        call_tok = sum(call_token_counts(sample))
        if leaves == args.leaves[0]:
            run_tree(model, layout)  # warm-up
            run_tree(model, layout, "tree")
        t_dense = best_time(lambda L=layout: run_tree(model, L), args.repeats)  # type: ignore[misc]
        t_tree = best_time(lambda L=layout: run_tree(model, L, "tree"), args.repeats)  # type: ignore[misc]
        t_paths = best_time(lambda L=layout: run_paths(model, L), args.repeats)  # type: ignore[misc]
        t_calls = best_time(lambda S=sample: run_calls(model, S), args.repeats)  # type: ignore[misc]
        of_ratio = (t_paths / t_tree) / (path_tok / unique)
        print(
            f"{leaves:>6} {unique:>7} {path_tok:>8} {call_tok:>8} | {t_dense:>7.3f} {t_tree:>7.3f}"
            f" {t_paths:>7.3f} {t_calls:>7.3f} | {t_paths / t_dense:>10.2f}x {t_paths / t_tree:>9.2f}x"
            f" {of_ratio:>8.0%} {t_calls / t_tree:>9.2f}x {pair_ratio(layout):>9.2f}x",
            flush=True,
        )


if __name__ == "__main__":
    main()
