"""Benchmark: training step time, synchronous loop vs asynchronous rollouts, side by side.

    PYTHONPATH=src .venv/bin/python benchmarks/async_steps.py               # ~2 minutes on 2 busy cores
    PYTHONPATH=src .venv/bin/python benchmarks/async_steps.py --model default --steps 4 --sleep 4

The same run twice, `train.max_off_policy_steps = 0` (baseline: rollouts, then train) and `= k`
(`--lag`, default 1: the next step's rollouts run while the trainer updates): the real loop, proxy,
embedded hf engine sampling from the policy, bubblewrap sandboxes, checkers and Trainer. Each rollout
is the `shell` harness making one model call with curl, then a `--sleep` seconds "tool" (what agent
rollouts mostly do: wait on tools and the model, not on this machine's cores), then its checker. GRPO
groups have reward variance (the score comes from the rollout's token), so every step trains.

Prints, per arm: wall seconds per step (mean over steps after the first, which pays for loading and
has nothing to overlap), the mean of the loop's `time.rollouts` (waiting for rollouts) and
`time.train`, the staleness of the trained rollouts, and the step-time ratio sync / async. Asynchrony
can at best hide the shorter of rollout time and train time; on a CPU-only machine sampling and
training also compete for the same cores, so the ratio here is pessimistic for a GPU trainer beside
sandboxes that wait on tools. Left out: real harnesses, vLLM, several machines.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import tempfile
import time
from pathlib import Path
from statistics import fmean
from typing import Any

from harnessrl.config import Config
from harnessrl.rollout.testing import SCORE_FROM_KEY, checked_task, curl_call
from harnessrl.train.loop import train


def command(sleep: float, max_tokens: int) -> str:
    return f"{curl_call(max_tokens=max_tokens)} && sleep {sleep} && {SCORE_FROM_KEY}"


TASKS = [checked_task(f"t{i}", "write a score") for i in range(4)]


def make_cfg(out: Path, args: argparse.Namespace, lag: int) -> Config:
    return Config.model_validate(
        {
            "engine": {"type": "hf", "model": args.model, "sampling": {"max_tokens": args.max_tokens}},
            "rollout": {"concurrency": 2 * args.tasks * args.group_size, "timeout_s": 300.0},
            "train": {
                "lr": 1e-5,
                "steps": args.steps,
                "out_dir": str(out),
                "tasks_per_step": args.tasks,
                "group_size": args.group_size,
                "harnesses": ["shell"],
                "harness_options": {"shell": {"command": command(args.sleep, args.max_tokens)}},
                "max_off_policy_steps": lag,
                "keep_checkpoints": 1,
            },
        }
    )


def run_arm(args: argparse.Namespace, lag: int, root: Path) -> dict[str, Any]:
    cfg = make_cfg(root / f"lag{lag}", args, lag)
    t0 = time.perf_counter()
    records = asyncio.run(train(cfg, TASKS, echo=lambda _: None))
    wall = time.perf_counter() - t0
    later = records[1:] or records
    stale: dict[str, int] = {}
    for r in records:
        for k, v in r["staleness"]["counts"].items():
            stale[k] = stale.get(k, 0) + v
    return {
        "wall": wall,
        "step": fmean(r["time"]["step"] for r in later),
        "wait": fmean(r["time"]["rollouts"] for r in later),
        "ran": fmean(r["time"]["rollouts_ran"] for r in later),
        "train": fmean(r["time"].get("train", 0.0) for r in later),
        "trained": sum(r["trained_rollouts"] for r in records),
        "stale": stale,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="tiny-qwen3", help="engine.model (tiny-qwen3 | default = SmolLM2)")
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--tasks", type=int, default=2, help="tasks per step")
    ap.add_argument("--group-size", type=int, default=4)
    ap.add_argument("--sleep", type=float, default=2.0, help="seconds each rollout's 'tool' runs")
    ap.add_argument("--max-tokens", type=int, default=16)
    ap.add_argument("--lag", type=int, default=1, help="train.max_off_policy_steps of the async arm")
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    with tempfile.TemporaryDirectory(prefix="async-steps-") as tmp:
        sync = run_arm(args, 0, Path(tmp))
        lagged = run_arm(args, args.lag, Path(tmp))
    n = args.tasks * args.group_size
    print(f"\n{args.steps} steps x {n} rollouts ({args.model}; curl + sleep {args.sleep} s + checker)")
    print(f"{'arm':<12}{'s/step':>9}{'wait':>8}{'ran':>8}{'train':>8}{'trained':>9}  staleness counts")
    for name, r in (("sync (0)", sync), (f"async ({args.lag})", lagged)):
        print(
            f"{name:<12}{r['step']:>9.2f}{r['wait']:>8.2f}{r['ran']:>8.2f}{r['train']:>8.2f}"
            f"{r['trained']:>9}  {r['stale']}"
        )
    ratio, wall = sync["step"] / lagged["step"], sync["wall"] / lagged["wall"]
    print(f"step time sync / async: {ratio:.2f}x  (whole run, loading included: {wall:.2f}x)")
    print("(s/step, wait, ran, train: means over steps 2..N; wait = time.rollouts, ran = time.rollouts_ran)")


if __name__ == "__main__":
    main()
