"""Benchmark: one RL step of the quickstart config, end to end, split by stage, against a named baseline.

    .venv/bin/python benchmarks/e2e.py                          # 2 steps each, ~10 minutes on 2 cores
    .venv/bin/python benchmarks/e2e.py --steps 1 --model runs/quickstart/sft/model

Runs `train.loop.TrainLoop` steps with `configs/quickstart.toml` (whitebox:00000, GRPO, tasks_per_step x
group_size rollouts per step) on freshly generated train tasks, twice, in one process:
- baseline `scripted`: the scripted engine replaying each task's reference (`train.sft.demo_engine`):
  the same harness processes, sandboxes, proxy and checkers, no model compute: the floor that the
  harness + sandbox + verify path puts under a step;
- `embedded`: the configured engine (SmolLM2-135M on the hf engine; `--model` takes the SFT model
  folder, so that GRPO groups have variance and the train stage runs).
Per step it prints the time of each stage from the loop's own clock (`rollouts` includes verify:
the checker runs inside each rollout), the checker seconds summed over the step's rollouts
(`verify (sum)`: what verify costs in rollout-seconds, spread over `rollout.concurrency` slots),
`trees`, `train` (advantages + optimizer step), `weights` (engine weight hand-off), and rollouts per
minute of the rollouts stage, with the ratio to the baseline. Run it on a quiet machine (`uptime`).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def verify_seconds(out_dir: Path, step: int) -> float:
    """Checker seconds summed over the rollouts of `step` (from each rollout's reward.json)."""
    total = 0.0
    from harnessrl.formats.rollout_dir import REWARD_FILE, read_reward

    for path in out_dir.glob(f"rollouts/s{step:06d}-*/{REWARD_FILE}"):
        detail = read_reward(path.parent).get("detail") or {}
        total += float((detail.get("code") or {}).get("duration_s") or 0.0)
    return total


async def run(name: str, cfg: Any, tasks: list[Any], engine: Any, steps: int) -> list[dict[str, Any]]:
    from harnessrl.train.build import build_trainer
    from harnessrl.train.loop import TrainLoop

    loop = TrainLoop(
        cfg, tasks, build_trainer(cfg), engine, echo=lambda s: print(f"  [{name}] {s}", flush=True)
    )
    records = await loop.run()
    for rec in records:
        rec["verify_sum"] = verify_seconds(Path(cfg.train.out_dir), rec["step"])
    return records


def row(name: str, rec: dict[str, Any], base_rate: float | None) -> list[str]:
    t = rec["time"]
    rate = 60.0 * rec["rollouts"] / max(t.get("rollouts", 0.0), 1e-9)
    train = t.get("advantages", 0.0) + t.get("train", 0.0)
    ratio = "1.00 (baseline)" if base_rate is None else f"{rate / base_rate:.2f}"
    return [
        name, str(rec["step"]), f"{t['step']:.1f}", f"{t.get('rollouts', 0):.1f}", f"{rec['verify_sum']:.1f}",
        f"{t.get('trees', 0):.2f}", f"{train:.1f}", f"{t.get('weights', 0):.2f}",
        f"{rate:.1f}", ratio, rec["skip_reason"] or "trained",
    ]  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", default=str(REPO / "configs" / "quickstart.toml"))
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--model", default=None, help="engine.model for the embedded run (default: the config's)")
    ap.add_argument("-o", dest="overrides", action="append", default=[], help="dotted config override")
    args = ap.parse_args()
    os.environ.setdefault("TQDM_DISABLE", "1")
    from harnessrl.config import load_config
    from harnessrl.engines import build_engine
    from harnessrl.tasks import load_tasks
    from harnessrl.tasks.generate import TRAIN_FAMILIES, generate
    from harnessrl.train.sft import demo_engine

    tmp = Path(tempfile.mkdtemp(prefix="e2e-"))
    base = load_config(
        args.config, [f"train.steps={args.steps}", "train.keep_checkpoints=1", *args.overrides]
    )
    generate(
        list(base.quickstart.families or TRAIN_FAMILIES), base.quickstart.train_per_family, 0, tmp / "tasks"
    )
    tasks = load_tasks(str(tmp / "tasks" / "train")).tasks
    harness = base.quickstart.harness
    common = {"train": base.train.model_copy(update={"harnesses": [harness]})}
    if args.model:
        common["engine"] = base.engine.model_copy(update={"model": args.model})
    cfg = base.model_copy(update=common)
    results: dict[str, list[dict[str, Any]]] = {}
    for name in ("scripted", "embedded"):
        run_cfg = cfg.model_copy(update={"train": cfg.train.model_copy(update={"out_dir": str(tmp / name)})})
        engine = demo_engine(run_cfg, tasks, harness) if name == "scripted" else build_engine(run_cfg.engine)
        t0 = time.perf_counter()
        results[name] = asyncio.run(run(name, run_cfg, tasks, engine, args.steps))
        print(f"{name}: {time.perf_counter() - t0:.0f} s for {args.steps} steps", flush=True)
    header = ["engine", "step", "step s", "rollouts s", "verify (sum) s", "trees s", "train s", "weights s",
              "rollouts/min", "vs scripted", "optimizer"]  # fmt: skip
    base_rate = None
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for name in ("scripted", "embedded"):
        for rec in results[name]:
            cells = row(name, rec, base_rate if name != "scripted" else None)
            lines.append("| " + " | ".join(cells) + " |")
        if name == "scripted":
            t = sum(r["time"].get("rollouts", 0.0) for r in results[name])
            base_rate = 60.0 * sum(r["rollouts"] for r in results[name]) / max(t, 1e-9)
    load = os.getloadavg()[0]
    print(
        f"\nquickstart config {args.config}: {cfg.train.tasks_per_step} tasks x {cfg.train.group_size} "
        f"rollouts per step via {harness}, concurrency {cfg.rollout.concurrency}; load {load:.1f}"
    )
    print("\n".join(lines))


if __name__ == "__main__":
    main()
