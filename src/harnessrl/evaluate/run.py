"""Running an evaluation: every (task, harness) pair R times through the real rollout runner.

    report = await evaluate(cfg, tasks)                                   # eval.* of the config
    report = await evaluate(cfg, tasks, harnesses=[harness_name(c) for c in eval_codes()],
                            policies=[parse_policy("sft=runs/sft/model")])

Each policy (`eval.checkpoints`, default `engine.model`) gets its own engine; the rollouts go through
the same sandbox, proxy and checker as training (`rollout.session.RolloutStack`). Run r of pair (task,
harness) is a RolloutJob whose calls sample with the seed `eval_seed(eval.seed, task, harness, r)` (call i of
the rollout with that seed + i): recorded in every outcome, and the same seed gives the same ids on
the embedded engine wherever batching does not break a float tie. With the scripted engine and no
script, each harness gets its own reference engine (its shell tool differs), so harnesses run one
after another; otherwise all harnesses of a policy share one engine and run concurrently.

Scoring is the task's own (`verify.score_task`: code checker, rubric judge at `verify.judge`, or the
hybrid weighting). A rollout that did not end `ok` scores 0 and fails, whatever its checker said.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from harnessrl.evaluate.config import EvalSections
from harnessrl.evaluate.paired import comparisons, sentence
from harnessrl.evaluate.stats import Outcome, breakdown, space_group, summarize
from harnessrl.protocols import Engine
from harnessrl.rollout.runner import RolloutJob, RolloutRunner
from harnessrl.types import EngineError, HarnessName, Rollout, RolloutStatus, Task


@dataclass(frozen=True)
class Policy:
    """A policy to evaluate: model folder the engine loads, plus trainer weights loaded on top."""

    label: str
    model: str
    """`engine.model` value: `default`, `tiny-qwen3` or a model folder."""
    weights: Path | None = None
    """A trainer checkpoint folder (`step-<n>/state.pt`) whose model weights replace the model's."""


def parse_policy(text: str, base_model: str = "default") -> Policy:
    """`[label=]default | MODEL_DIR | CHECKPOINT_DIR | TRAIN_OUT_DIR` -> Policy (label: the folder name)."""
    from harnessrl.formats.checkpoints import latest_checkpoint

    label, sep, where = text.partition("=")
    if not sep:
        label, where = "", text
    path = Path(where)
    if where in ("default", "tiny-qwen3") or (path / "config.json").is_file():
        return Policy(label or path.name, where)
    ckpt = path if (path / "state.pt").is_file() else latest_checkpoint(path / "checkpoints")
    if ckpt is None:
        raise EngineError(f"{where!r} is not `default`, a model folder, a checkpoint or a train run folder")
    return Policy(
        label or (path.name if ckpt != path else f"{path.parent.parent.name}-{path.name}"), base_model, ckpt
    )


def eval_seed(seed: int, task_id: str, harness: str, run: int) -> int:
    """The sampling seed of run `run` of (task, harness): 63 bits of sha256 of the four parts."""
    digest = hashlib.sha256(f"{seed}/{task_id}/{harness}/{run}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def harness_options(cfg: EvalSections, harness: str) -> dict[str, Any]:
    """Adapter switches for `harness`: `eval.harness_options` (name, then `whitebox`), else training's."""
    opts = cfg.eval.harness_options
    if harness in opts:
        return dict(opts[harness])
    if HarnessName.arg_of(harness, "whitebox"):
        if "whitebox" in opts:
            return dict(opts["whitebox"])
        if cfg.train.harness_space is not None:
            return dict(cfg.train.harness_space.options)
    return dict(cfg.train.harness_options.get(harness, {}))


def first_per_category(tasks: Sequence[Task], n: int | None) -> list[Task]:
    """The first `n` tasks of each category, in task order (all of them for None)."""
    if n is None:
        return list(tasks)
    taken: Counter[str] = Counter()
    kept = []
    for task in tasks:
        taken[task.category] += 1
        if taken[task.category] <= n:
            kept.append(task)
    return kept


def eval_jobs(
    cfg: EvalSections, tasks: Sequence[Task], harnesses: Sequence[str], label: str
) -> list[RolloutJob]:
    """Run r of every (task, harness): R x tasks x harnesses jobs, each with its seed; a harness in
    `eval.per_category` gets the first N tasks of each category only."""
    jobs = []
    for harness in harnesses:
        safe = harness.replace(":", "_").replace("/", "_")
        options = harness_options(cfg, harness)
        for task in first_per_category(tasks, cfg.eval.per_category.get(harness)):
            for run in range(cfg.eval.runs):
                seed = eval_seed(cfg.eval.seed, task.id, harness, run)
                rid = f"{label}-{task.id}-{safe}-r{run}"
                jobs.append(RolloutJob(task, harness, rid, options=options, seed=seed, run=run))
    return jobs


def outcome(rollout: Rollout, task: Task, run: int, seed: int, threshold: float) -> Outcome:
    ok = rollout.status is RolloutStatus.OK and rollout.reward is not None
    score = float(rollout.reward or 0.0) if ok else 0.0
    return Outcome(
        task_id=task.id,
        category=task.category,
        harness=rollout.harness,
        run=run,
        seed=seed,
        status=rollout.status_label,
        reward=rollout.reward,
        score=score,
        passed=ok and score >= threshold,
        rollout_id=rollout.rollout_id,
    )


def train_codes(cfg: EvalSections) -> list[str]:
    """The white-box codes training used (`train.harness_space`, else the orthogonal array)."""
    from harnessrl.scaling import design_codes, orthogonal_array

    hs = cfg.train.harness_space
    if hs is None:
        return list(orthogonal_array())
    return design_codes(hs.design, cfg.train.seed if hs.seed is None else hs.seed, hs.single)


def policy_report(cfg: EvalSections, outcomes: Sequence[Outcome]) -> dict[str, Any]:
    """Overall, per harness, per category, per task (and the harness-scaling groups) of one policy."""
    runs = cfg.eval.runs
    report: dict[str, Any] = {
        "summary": summarize(outcomes, runs),
        "by_harness": breakdown(outcomes, runs, lambda o: o.harness),
        "by_category": breakdown(outcomes, runs, lambda o: o.category),
        "by_task": breakdown(outcomes, runs, lambda o: o.task_id),
    }
    if any(HarnessName.arg_of(o.harness, "whitebox") for o in outcomes):
        codes = train_codes(cfg)
        report["space"] = breakdown(outcomes, runs, lambda o: space_group(o.harness, codes))
    return report


async def _engine(cfg: EvalSections, tasks: Sequence[Task], policy: Policy, harness: str) -> Engine:
    from harnessrl.rollout.session import build_engine_for

    engine_cfg = cfg.engine.model_copy(update={"model": policy.model})
    run_cfg = cfg.model_copy(
        update={"engine": engine_cfg, "rollout": cfg.rollout.model_copy(update={"harness": harness})}
    )
    engine = build_engine_for(run_cfg, list(tasks))
    if policy.weights is not None and cfg.engine.type != "scripted":
        await engine.update_weights(load_weights(policy.weights))
    return engine


def load_weights(checkpoint: Path) -> dict[str, Any]:
    """The model state dict of a trainer checkpoint (full fine-tunes; LoRA checkpoints are refused)."""
    import torch

    blob = torch.load(checkpoint / "state.pt", weights_only=False, map_location="cpu")
    weights: dict[str, Any] = blob["model"]
    if any("lora_" in k for k in weights):
        raise EngineError(f"{checkpoint}: LoRA checkpoints are not evaluated yet; export merged weights")
    return weights


async def run_policy(
    cfg: EvalSections,
    tasks: Sequence[Task],
    harnesses: Sequence[str],
    policy: Policy,
    on_done: Callable[[Rollout], None] | None = None,
    engine: Engine | None = None,
) -> list[Outcome]:
    """All rollouts of one policy; outcomes in job order. A given `engine` serves every harness
    (with the policy's weights loaded into it, if it has any)."""
    from harnessrl.rollout.session import RolloutStack

    by_id = {t.id: t for t in tasks}
    out_dir = Path(cfg.eval.out_dir) / "rollouts" / policy.label
    run_cfg = cfg.model_copy(update={"rollout": cfg.rollout.model_copy(update={"out_dir": str(out_dir)})})
    reference = cfg.engine.type == "scripted" and cfg.engine.script is None
    stacks = [[h] for h in harnesses] if reference and engine is None else [list(harnesses)]
    outcomes: list[Outcome] = []
    for group in stacks:
        jobs = eval_jobs(cfg, tasks, group, policy.label)
        if engine is not None and policy.weights is not None:
            await engine.update_weights(load_weights(policy.weights))
        served = (
            cast(Engine, Borrowed(engine))
            if engine is not None
            else await _engine(cfg, tasks, policy, group[0])
        )
        async with RolloutStack.from_config(run_cfg, list(tasks), engine=served) as stack:
            assert stack.runner is not None
            judge = _judge(cfg, tasks)
            if judge is not None:
                if not isinstance(stack.runner, RolloutRunner):
                    why = "judge-graded tasks need rollout.backend = 'asyncio' (Ray workers score alone)"
                    raise ValueError(why)
                stack.runner.judge = judge
            try:
                rollouts = await stack.runner.run_many(jobs, on_done=on_done)
            finally:
                if judge is not None:
                    await judge.aclose()
        for job, r in zip(jobs, rollouts, strict=True):
            assert job.seed is not None
            outcomes.append(outcome(r, by_id[job.task.id], job.run, job.seed, cfg.eval.pass_threshold))
    return outcomes


class Borrowed:
    """An engine lent to a RolloutStack, which closes what it is given: this one stays open (the
    caller owns it and may serve the next stack with it)."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def __getattr__(self, name: str) -> Any:
        return getattr(self._engine, name)

    async def close(self) -> None:
        return None


def _judge(cfg: EvalSections, tasks: Sequence[Task]) -> Any:
    if all(t.grading_type == "automated" for t in tasks):
        return None
    from harnessrl.verify import RubricJudge

    return RubricJudge(cfg.verify.judge)


async def evaluate(
    cfg: EvalSections,
    tasks: Sequence[Task],
    *,
    harnesses: Sequence[str] | None = None,
    policies: Sequence[Policy] | None = None,
    on_done: Callable[[Rollout], None] | None = None,
    engine: Engine | None = None,
    echo: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Evaluate every policy on every (task, harness) pair `eval.runs` times; returns the report dict
    (`evaluate.tables` writes and prints it). Defaults: `eval.harnesses` (else `rollout.harness`),
    `eval.checkpoints` (else `engine.model`). With `engine`, every policy is served by it (a
    policy's trainer weights are loaded into it first; model folders are not reloaded): a script that
    already holds an engine, or a test's scripted engine."""
    if not tasks:
        raise ValueError("no tasks to evaluate")
    names = list(harnesses or cfg.eval.harnesses or [cfg.rollout.harness])
    chosen = list(policies or [parse_policy(c, cfg.engine.model) for c in cfg.eval.checkpoints])
    chosen = chosen or [Policy(Path(cfg.engine.model).name, cfg.engine.model)]
    if len({p.label for p in chosen}) != len(chosen):
        raise ValueError(f"policy labels must differ: {[p.label for p in chosen]}")
    stray = sorted(set(cfg.eval.per_category) - set(names))
    if stray:
        raise ValueError(f"eval.per_category names {stray}, not evaluated (harnesses: {names})")
    report: dict[str, Any] = {"config": _header(cfg, tasks, names), "policies": {}, "outcomes": []}
    by_policy: dict[str, list[Outcome]] = {}
    for policy in chosen:
        outcomes = by_policy[policy.label] = await run_policy(cfg, tasks, names, policy, on_done, engine)
        entry = policy_report(cfg, outcomes)
        entry["checkpoint"] = {"model": policy.model, "weights": str(policy.weights or "")}
        report["policies"][policy.label] = entry
        report["outcomes"] += [dict(o.as_dict(), policy=policy.label) for o in outcomes]
        s = entry["summary"]
        echo(f"eval {policy.label}: Pass@1 {s['pass1']:.3f} mean score {s['mean_score']:.3f} over "
             f"{s['pairs']} pairs x {cfg.eval.runs} runs; statuses {s['statuses']}")  # fmt: skip
    if len(chosen) > 1:
        report["transfer"] = {
            p: {h: v["pass1"] for h, v in e["by_harness"].items()} for p, e in report["policies"].items()
        }
        e = cfg.eval
        report["paired"] = comparisons(
            by_policy, resamples=e.bootstrap_resamples, seed=e.seed, confidence=e.confidence
        )
        for c in report["paired"]:
            echo(f"paired: {sentence(c)}")
    return report


def _header(cfg: EvalSections, tasks: Sequence[Task], harnesses: Sequence[str]) -> dict[str, Any]:
    return {
        "tasks": cfg.tasks.path,
        "split": cfg.tasks.split,
        "num_tasks": len(tasks),
        "harnesses": list(harnesses),
        "per_category": dict(cfg.eval.per_category),
        "runs": cfg.eval.runs,
        "pass_threshold": cfg.eval.pass_threshold,
        "seed": cfg.eval.seed,
        "engine": cfg.engine.type,
        "sampling": cfg.engine.sampling.model_dump(),
        "bootstrap_resamples": cfg.eval.bootstrap_resamples,
        "confidence": cfg.eval.confidence,
    }
