"""The harness-scaling ablation: one GRPO run per design from one cold start, evaluated in and out of
the space (`scripts/scaling_ablation`, config `configs/scaling/ablation.toml`).

    scripts/scaling_ablation                                  # single, random-18, oa-18 (ablation.arms)
    scripts/scaling_ablation -o 'ablation.arms=["oa-18"]' -o train.steps=2
    scripts/scaling_ablation --combine runs/scaling-ablation --combine runs/scaling-ablation-s1  # seeds

Stages (each reused when its inputs did not change, as in `harnessrl quickstart`; `--fresh` redoes):

    tasks        generated train and held-out instances (`ablation.families`, `*_per_family`)
    sft          the shared cold start: demonstrations through each of `ablation.sft_codes` (the
                 scripted engine replaying each train task's reference), one SFT on all of them
    arm-<name>   GRPO from the cold start over the design's white-box configurations
                 (`train.harness_space` with `design = <name>`; `single` pairs by `repeat`)
    eval/<name>  the policy on the held-out tasks through the in-space held-out configurations
                 (`ablation.eval_configs`, drawn outside every arm's training set and the SFT codes)
                 and through the out-of-space real harnesses (`ablation.out_of_space`)

The table (`ablation.md`, `ablation.json`) is the paper's: in-space held-out Pass@1 and out-of-space
Pass@1 per arm, with the cold start's row (and the untrained model's, with `ablation.base_model_row`).
Nothing is tuned on the held-out tasks or configurations; every policy is evaluated with the same
seeds (`harnessrl.evaluate`: seed per (task, harness, run)).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from harnessrl.config_section import ConfigError
from harnessrl.experiments.config import AblationSections
from harnessrl.experiments.stages import (
    Stages,
    cold_start,
    evaluate_policy,
    generate_splits,
    load_split,
    stage_inputs,
    train_families,
    train_policy,
)
from harnessrl.formats.summaries import write_ablation
from harnessrl.scaling import harness_name
from harnessrl.scaling.config import HarnessSpaceConfig
from harnessrl.types import Task

GROUPS = ("in_space_heldout", "out_of_space")


def arm_space(cfg: AblationSections, arm: str) -> HarnessSpaceConfig:
    """`train.harness_space` of one arm: its design, the configured k and pairing (`single`: repeat)."""
    from harnessrl.scaling import DESIGNS

    if arm not in DESIGNS:
        raise ConfigError(f"ablation.arms: unknown design {arm!r}; known: {', '.join(DESIGNS)}")
    hs = cfg.train.harness_space or HarnessSpaceConfig()
    return hs.model_copy(update={"design": arm, "pairing": "repeat" if arm == "single" else hs.pairing})


def arm_codes(cfg: AblationSections, arm: str) -> list[str]:
    from harnessrl.scaling import design_codes

    hs = arm_space(cfg, arm)
    return design_codes(arm, cfg.train.seed if hs.seed is None else hs.seed, hs.single)


def eval_configs(cfg: AblationSections) -> list[str]:
    """The in-space held-out evaluation configurations: a draw (seeded by `eval.seed`) of
    `ablation.eval_configs` codes that no arm trains on and the cold start never saw."""
    from harnessrl.scaling import all_codes

    seen = set(cfg.ablation.sft_codes)
    for arm in cfg.ablation.arms:
        seen |= set(arm_codes(cfg, arm))
    pool = [c for c in all_codes() if c not in seen]
    n = cfg.ablation.eval_configs
    if n > len(pool):
        raise ConfigError(f"ablation.eval_configs = {n}, but only {len(pool)} codes are outside the arms")
    return sorted(random.Random(f"ablation-eval/{cfg.eval.seed}").sample(pool, n))


async def _tasks(cfg: AblationSections, folder: Path) -> dict[str, str]:
    a = cfg.ablation
    families = train_families(a.families)
    return generate_splits(families, a.train_per_family, a.heldout_per_family, a.task_seed, folder)


async def _sft(
    cfg: AblationSections, tasks: list[Task], folder: Path, echo: Callable[[str], None]
) -> dict[str, Any]:
    """Demonstrations through every `sft_codes` configuration, then one SFT over all of them."""
    return await cold_start(cfg, tasks, {c: harness_name(c) for c in cfg.ablation.sft_codes}, folder, echo)


async def _arm(cfg: AblationSections, arm: str, tasks: list[Task], start: str, folder: Path) -> str:
    engine = cfg.engine.model_copy(update={"model": start})
    t = cfg.train.model_copy(
        update={"out_dir": str(folder), "harnesses": [], "harness_space": arm_space(cfg, arm)}
    )
    _, ckpt = await train_policy(cfg.model_copy(update={"engine": engine, "train": t}), tasks, folder)
    return ckpt


async def _eval(
    cfg: AblationSections, tasks: list[Task], harnesses: list[str], label: str, model: str,
    weights: str | None, arm: str | None, folder: Path,
) -> dict[str, Any]:  # fmt: skip
    """`evaluate_policy` with the arm's design as `train.harness_space` (the eval's space groups)."""
    if arm is not None:
        cfg = cfg.model_copy(
            update={"train": cfg.train.model_copy(update={"harness_space": arm_space(cfg, arm)})}
        )
    entry = await evaluate_policy(cfg, tasks, harnesses, label, model, weights, folder)
    return {"summary": entry["summary"], "space": entry.get("space", {}), "by_harness": entry["by_harness"]}


async def run_ablation(
    cfg: AblationSections, *, fresh: bool = False, echo: Callable[[str], None] = print
) -> dict[str, Any]:
    """All stages (module docstring); returns {policy: eval groups} plus stage seconds."""
    out = Path(cfg.ablation.out_dir)
    st = Stages(out, fresh, echo)
    for arm in cfg.ablation.arms:
        arm_space(cfg, arm)  # an unknown design fails before anything runs
    configs = eval_configs(cfg)
    harnesses = [harness_name(c) for c in configs] + list(cfg.ablation.out_of_space)
    base = ("engine", "proxy", "sandbox", "rollout", "trace")
    task_inputs = {k: v for k, v in cfg.ablation.model_dump().items() if k in (
        "families", "train_per_family", "heldout_per_family", "task_seed")}  # fmt: skip
    paths = await st.run("tasks", task_inputs, lambda f: _tasks(cfg, f))
    train_tasks, held = load_split(paths["train"]), load_split(paths["heldout"])
    echo(f"tasks: {len(train_tasks)} train, {len(held)} held-out; eval harnesses: {', '.join(harnesses)}")
    sft_inputs = stage_inputs(cfg, *base, "sft") | task_inputs | {
        "codes": cfg.ablation.sft_codes, "trainer": cfg.train.trainer.model_dump()}  # fmt: skip
    sft = await st.run("sft", sft_inputs, lambda f: _sft(cfg, train_tasks, f, echo))
    ev = stage_inputs(cfg, *base, "eval") | {"harnesses": harnesses, "tasks": task_inputs}
    results: dict[str, Any] = {}
    if cfg.ablation.base_model_row:
        results["base"] = await st.run(
            "eval/base", ev, lambda f: _eval(cfg, held, harnesses, "base", cfg.engine.model, None, None, f)
        )
    results["cold-start"] = await st.run(
        "eval/cold-start", ev | sft_inputs,
        lambda f: _eval(cfg, held, harnesses, "cold-start", sft["model"], None, None, f),
    )  # fmt: skip
    for arm in cfg.ablation.arms:
        arm_inputs = sft_inputs | stage_inputs(cfg, "train") | {"arm": arm_space(cfg, arm).model_dump()}
        ckpt = await st.run(f"arm-{arm}", arm_inputs, partial(_arm, cfg, arm, train_tasks, sft["model"]))
        results[arm] = await st.run(
            f"eval/{arm}", ev | arm_inputs, partial(_eval, cfg, held, harnesses, arm, sft["model"], ckpt, arm)
        )
    summary = {
        "policies": results,
        "seconds": st.seconds,
        "heldout_tasks": len(held),
        "eval_configs": configs,
        "out_of_space": list(cfg.ablation.out_of_space),
        "arms": {arm: arm_codes(cfg, arm) for arm in cfg.ablation.arms},
        "sft": sft,
    }
    write_ablation(out, summary)
    (out / "ablation.md").write_text(table_markdown(summary, cfg), encoding="utf-8")
    return summary


TABLE_HEADER = ["policy", "in-space held-out Pass@1 +- se", "mean score", "n",
                "out-of-space Pass@1 +- se", "mean score", "n", "statuses"]  # fmt: skip


def cell(s: dict[str, Any]) -> str:
    """Pass@1 +- the standard error over (task, harness) pairs (`se_pairs`: with few tasks and one
    run the sampling of pairs is the noise that matters), and over runs when there are several."""
    if s.get("pass1") is None:
        return "-"
    text = f"{s['pass1']:.3f}"
    if s.get("se_pairs") is not None:
        text += f" +- {s['se_pairs']:.3f}"
    if s.get("se") is not None:
        text += f" (runs +- {s['se']:.3f})"
    return text


def table_rows(results: dict[str, Any]) -> list[list[str]]:
    from harnessrl.evaluate.tables import fmt, statuses

    rows = []
    for name, r in results.items():
        row = [name]
        for group in GROUPS:
            s = r["space"].get(group, {})
            row += [cell(s), fmt(s.get("mean_score")), str(s.get("pairs", 0))]
        rows.append([*row, statuses(r["summary"])])
    return rows


def table_markdown(summary: dict[str, Any], cfg: AblationSections) -> str:
    lines = [
        f"{summary['heldout_tasks']} held-out tasks x {len(summary['eval_configs'])} in-space held-out "
        f"configurations ({', '.join(summary['eval_configs'])}) and out-of-space "
        f"{', '.join(summary['out_of_space']) or '-'}, {cfg.eval.runs} run(s) each.",
        "",
        "| " + " | ".join(TABLE_HEADER) + " |",
        "|" + "---|" * len(TABLE_HEADER),
    ]
    lines += ["| " + " | ".join(row) + " |" for row in table_rows(summary["policies"])]
    return "\n".join(lines) + "\n"
