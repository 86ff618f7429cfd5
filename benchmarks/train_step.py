"""One RL trainer step on a step-shaped batch: before vs after the two step-cost cuts, side by side.

    .venv/bin/python benchmarks/train_step.py                      # tiny model, ~1 minute
    .venv/bin/python benchmarks/train_step.py --model default      # SmolLM2-135M (the quickstart's)

The batch is shaped like a quickstart GRPO step: `--groups` tasks x `--rollouts` rollouts, every tree
= a system prompt + tool block shared by all (`--system` tokens) + its task's prompt (`--task`
tokens), then `--calls` turns of model output and tool output. Three ways, each the real
`Trainer.step` (AdamW, token budget, TIS) from the same weights:

- before:  what a step cost until now: a separate no-grad forward for logp_old (`Trainer.logprobs`,
           the pass `prepare` used to run), then the update, trees packed one by one;
- one-pass: logp_old from the update's own forward (no second pass), trees packed one by one
           (`trainer.share_prefixes = false`);
- shared:  one pass, and the trees merged into forests that lay each shared prompt out once (the
           default).

Prints seconds per step (best of `--repeats`), tokens forwarded, and the ratios against `before`.
"""

from __future__ import annotations

import argparse
import random
import time
from typing import Any

import torch
from packing import model_args

from harnessrl.config import LossConfig, TrainerConfig
from harnessrl.engines.models import load_model
from harnessrl.rl.advantages import broadcast, grpo_advantages
from harnessrl.rl.packing import layout_tree
from harnessrl.train.causal_lm import tiny_causal_lm
from harnessrl.train.trainer import Trainer
from harnessrl.types import TreeNode, TreeSample


def node(i: int, tokens: list[int], model: list[bool], lps: list[float]) -> TreeNode:
    return TreeNode(node_id=i, parent=i - 1, tokens=tokens, model_mask=model, logprobs=lps)


def step_batch(args: argparse.Namespace, vocab: int) -> list[TreeSample]:
    rng = random.Random(args.seed)
    system = [rng.randrange(vocab) for _ in range(args.system)]
    samples = []
    for g in range(args.groups):
        prompt = system + [rng.randrange(vocab) for _ in range(args.task)]
        for r in range(args.rollouts):
            nodes = [node(0, prompt, [False] * len(prompt), [0.0] * len(prompt))]
            for c in range(args.calls):
                out = [rng.randrange(vocab) for _ in range(args.out)]
                tool = [rng.randrange(vocab) for _ in range(args.tool if c < args.calls - 1 else 0)]
                lps = [-rng.uniform(0.01, 2.0) for _ in out] + [0.0] * len(tool)
                nodes.append(node(len(nodes), out + tool, [True] * len(out) + [False] * len(tool), lps))
            reward = float(rng.random() < 0.5)
            paths = [list(range(len(nodes)))]
            samples.append(
                TreeSample(rollout_id=f"g{g}r{r}", group_id=f"g{g}", reward=reward, nodes=nodes, paths=paths)
            )
    return samples


def model_of(args: argparse.Namespace) -> Any:
    if args.model:
        return load_model(args.model, "float32", "cpu")
    return tiny_causal_lm(vocab_size=args.vocab, hidden_size=args.hidden, layers=args.layers, seed=1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--groups", type=int, default=6)
    ap.add_argument("--rollouts", type=int, default=4)
    ap.add_argument("--system", type=int, default=250, help="system prompt + tools, shared by every tree")
    ap.add_argument("--task", type=int, default=60, help="task prompt, shared within a group")
    ap.add_argument("--calls", type=int, default=2)
    ap.add_argument("--out", type=int, default=30, help="model tokens per call")
    ap.add_argument("--tool", type=int, default=40, help="tool-output tokens between calls")
    ap.add_argument("--budget", type=int, default=1024, help="trainer.token_budget (the quickstart's)")
    ap.add_argument("--model", default="", help="a model folder or `default` (SmolLM2-135M); default: tiny")
    model_args(ap, hidden=256, layers=4, vocab=2048, threads=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    model = model_of(args)
    vocab = int(model.config.vocab_size)
    samples = step_batch(args, vocab)
    layouts = [layout_tree(s) for s in samples]
    adv = grpo_advantages([s.reward for s in samples], [s.group_id for s in samples])
    advs = [broadcast(L, a) for L, a in zip(layouts, adv, strict=True)]
    cfg = TrainerConfig(lr=1e-6, token_budget=args.budget, loss=LossConfig(tis_cap=2.0))
    state = {k: v.clone() for k, v in model.state_dict().items()}
    rows = []
    for name, share, extra_pass in (
        ("before", False, True),
        ("one-pass", False, False),
        ("shared", True, False),
    ):
        best, tokens = float("inf"), 0
        for _ in range(args.repeats):
            model.load_state_dict(state)
            tr = Trainer(model, cfg.model_copy(update={"share_prefixes": share}))
            t0 = time.perf_counter()
            if extra_pass:
                tr.logprobs(layouts)
            m = tr.step(layouts, advs)
            best = min(best, time.perf_counter() - t0)
            tokens = int(m["tokens"])
        rows.append((name, best, tokens))
    tree_tokens = sum(L.num_tokens for L in layouts)
    trained = sum(L.num_model_tokens for L in layouts)
    what = args.model or f"tiny {args.hidden}x{args.layers}"
    print(f"{len(samples)} trees ({args.groups} groups x {args.rollouts}), {tree_tokens} tree tokens, "
          f"{trained} trained; model {what}, {args.threads} threads, budget {args.budget}")  # fmt: skip
    base = rows[0][1]
    print(f"{'way':<10} {'s/step':>8} {'tokens fwd':>11} {'speed-up vs before':>19}")
    for name, secs, tokens in rows:
        print(f"{name:<10} {secs:>8.2f} {tokens:>11} {base / secs:>18.2f}x")


if __name__ == "__main__":
    main()
