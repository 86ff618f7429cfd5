"""Benchmark: prefix-tree construction on synthetic rollouts (1k rollouts x 30 calls x ~8k-token prompts).

    .venv/bin/python benchmarks/tree.py                 # default workload, ~1 minute on one core
    .venv/bin/python benchmarks/tree.py --rollouts 100  # quicker

Each synthetic rollout looks like a harness run: a main thread whose every call extends the previous
one with environment tokens (a tool result) and the previous output, growing so that prompts average
`--prompt-tokens`; one sub-agent (its own system prompt after a 3-token chat-template prefix shared
with the main thread) making 3 calls in the middle; and server retries (same prompt, new output, the
first output never consumed) at random.

It prints calls/s and tokens/s per CPU second (tokens = prompt + output summed over calls, i.e. the
per-call token count) for `build_trace` (insertion, classification, filters, statistics) and with
`to_sample`, the same for a naive baseline (every call compared token by token against every earlier
call to find its longest common prefix) on a few rollouts, the ratio between them, the three token
counts of the workload, and tokens/s at a quarter and twice the prompt size with their ratio to the
default size's rate (flat if the cost is linear in tokens). Generation time is excluded from every rate.

Insertion resumes from the previous call's path (its common prefix with the previous sequence found
by one C-level list comparison), so a thread that extends itself call by call costs per call in
proportion to its new tokens, not to its depth in nodes; on 2026-12-02 that took 2k-token prompts
from 40-60M to 60-80M tokens/s on the shared two-core box (best runs, interleaved old/new).
"""

from __future__ import annotations

import argparse
import random
import time
from typing import Any

from harnessrl.config import TraceConfig
from harnessrl.trace import aggregate_stats, build_trace
from harnessrl.types import ModelCall

VOCAB = 151_000


_POOL: list[int] = []


def _ids(rng: random.Random, n: int) -> list[int]:
    """n random token ids: a slice of a fixed random pool at a random offset (fast to generate)."""
    if not _POOL:
        _POOL.extend(random.Random(1).choices(range(VOCAB), k=1 << 22))
    start = rng.randrange(len(_POOL) - n)
    return _POOL[start : start + n]


def _call(rid: str, i: int, prompt: list[int], output: list[int], system: str) -> ModelCall:
    return ModelCall.model_construct(
        call_id=f"{rid}-{i}", rollout_id=rid, index=i, dialect="anthropic", requested_model="policy",
        prompt_ids=prompt, output_ids=output, output_logprobs=[-0.5] * len(output), finish_reason="stop",
        render="spliced", system_digest=system, tools_digest="tools", replay_of=None, tags=[], started_at=0.0,
    )  # fmt: skip


def synthetic_rollout(rng: random.Random, rid: str, calls: int, prompt_tokens: int) -> list[ModelCall]:
    """One rollout of `calls` calls: main thread with ~5% retries, plus a 3-call sub-agent.

    Main prompts grow linearly from about 0.55 to 1.55 x prompt_tokens, sub-agent prompts start at half
    of it, so the mean prompt is about prompt_tokens: each call adds the previous output (20-150 tokens)
    and an environment chunk (a tool result).
    """
    events = ["main"] * calls
    sub_start = calls // 3
    events[sub_start : sub_start + 3] = ["sub"] * 3
    for i in range(1, calls - 1):
        if events[i] == "main" and events[i + 1] == "main" and rng.random() < 0.05:
            events[i] = "retry"  # a dead output; the next call repeats the same prompt
    template = _ids(rng, 3)
    main = template + _ids(rng, prompt_tokens * 11 // 20)
    sub = template + _ids(rng, prompt_tokens // 2)
    steps = max(sum(1 for e in events if e == "main"), 1)
    env = max(prompt_tokens // steps - 85, 2)
    out: list[ModelCall] = []
    for i, event in enumerate(events):
        output = _ids(rng, rng.randint(20, 150))
        if event == "sub":
            out.append(_call(rid, i, sub, output, "sub"))
            sub = sub + output + _ids(rng, rng.randint(env // 2, env * 3 // 2))
        elif event == "retry":
            out.append(_call(rid, i, main, output, "main"))
        else:
            out.append(_call(rid, i, main, output, "main"))
            main = main + output + _ids(rng, rng.randint(env // 2, env * 3 // 2))
    return out


def naive_build(calls: list[ModelCall]) -> list[tuple[int, int]]:
    """Baseline: attach each call under the earlier call with the longest common prefix, found by a
    token-by-token comparison against every earlier call. Returns (parent call, shared tokens)."""
    seqs: list[list[int]] = []
    parents: list[tuple[int, int]] = []
    for c in calls:
        seq = c.prompt_ids + c.output_ids
        best, best_len = -1, 0
        for j, other in enumerate(seqs):
            k = 0
            n = min(len(seq), len(other))
            while k < n and seq[k] == other[k]:
                k += 1
            if k > best_len:
                best, best_len = j, k
        parents.append((best, best_len))
        seqs.append(seq)
    return parents


def measure(rng: random.Random, rollouts: int, calls: int, prompt_tokens: int, naive: int) -> dict[str, Any]:
    """Build trees for synthetic rollouts; CPU seconds (process_time) of each stage and the stats."""
    cfg = TraceConfig()
    m: dict[str, Any] = dict.fromkeys(("build_s", "sample_s", "naive_s"), 0.0)
    m.update(dict.fromkeys(("tokens", "prompts", "calls", "naive_tokens", "naive_calls"), 0))
    stats = []
    for r in range(rollouts):
        rollout = synthetic_rollout(rng, f"r{r}", calls, prompt_tokens)
        n_tok = sum(len(c.prompt_ids) + len(c.output_ids) for c in rollout)
        t0 = time.process_time()
        tree = build_trace(rollout, cfg)
        t1 = time.process_time()
        tree.to_sample()
        m["build_s"] += t1 - t0
        m["sample_s"] += time.process_time() - t1
        m["tokens"] += n_tok
        m["prompts"] += sum(len(c.prompt_ids) for c in rollout)
        m["calls"] += len(rollout)
        stats.append(tree.stats)
        if r < naive:
            t0 = time.process_time()
            naive_build(rollout)
            m["naive_s"] += time.process_time() - t0
            m["naive_tokens"] += n_tok
            m["naive_calls"] += len(rollout)
    m["stats"] = aggregate_stats(stats)
    return m


def report(m: dict[str, Any], rollouts: int, calls: int, naive: int) -> None:
    agg = m["stats"]
    build, both = m["build_s"], m["build_s"] + m["sample_s"]
    ours = m["tokens"] / build
    print(
        f"workload: {rollouts} rollouts x {calls} calls, mean prompt {m['prompts'] / m['calls']:,.0f} tokens"
    )
    print("rates are per CPU second (time.process_time), tokens = prompt + output summed over calls")
    print(
        f"build_trace:            {m['calls'] / build:10,.0f} calls/s {ours:14,.0f} tokens/s ({build:.2f} s)"
    )
    print(f"build_trace + to_sample:{m['calls'] / both:10,.0f} calls/s {m['tokens'] / both:14,.0f} tokens/s")
    if m["naive_s"] > 0:
        base = m["naive_tokens"] / m["naive_s"]
        print(f"naive pairwise token-by-token LCP ({naive} rollouts): "
              f"{m['naive_calls'] / m['naive_s']:,.0f} calls/s {base:,.0f} tokens/s")  # fmt: skip
        print(f"speed-up of build_trace over naive: {ours / base:.1f}x")
    print(f"tokens if every call is a sample (per_call): {agg['tokens_per_call']:,}")
    print(f"tokens if every kept path is a sample:       {agg['tokens_paths']:,}")
    print(f"unique kept tree tokens:                     {agg['tokens_unique']:,}")
    print(f"ratios: per_call/unique {agg['ratio_per_call_to_unique']:.2f}, "
          f"paths/unique {agg['ratio_paths_to_unique']:.2f}, "
          f"per_call/paths {agg['ratio_per_call_to_paths']:.2f}")  # fmt: skip
    print(
        f"calls by kind {agg['calls_by_kind']}, dead leaves {agg['dead_leaves']}, filtered {agg['filtered']}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description="Prefix-tree construction benchmark (see the module doc).")
    ap.add_argument("--rollouts", type=int, default=1000)
    ap.add_argument("--calls", type=int, default=30)
    ap.add_argument("--prompt-tokens", type=int, default=8000, help="mean prompt length")
    ap.add_argument(
        "--naive-rollouts", type=int, default=5, help="rollouts also timed with the naive baseline"
    )
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    m = measure(rng, args.rollouts, args.calls, args.prompt_tokens, args.naive_rollouts)
    report(m, args.rollouts, args.calls, args.naive_rollouts)
    print("linearity (50 rollouts each): tokens/s at mean prompt", end="")
    rate = m["tokens"] / m["build_s"]
    for size in (args.prompt_tokens // 4, args.prompt_tokens * 2):
        s = measure(rng, 50, args.calls, size, 0)
        r = s["tokens"] / s["build_s"]
        print(f"  {s['prompts'] / s['calls']:,.0f}: {r:,.0f} ({r / rate:.2f}x)", end="")
    print(" (x: of the rate at the default prompt; below 1 where per-call overhead dominates)")


if __name__ == "__main__":
    main()
