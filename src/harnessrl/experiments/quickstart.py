"""`harnessrl quickstart`: a small complete experiment that ends in a before/after table.

    harnessrl quickstart                       # configs/quickstart.toml (`commands.quickstart`)

Stages, each in its own folder under `quickstart.out_dir`, each skipped when its `stage.json` says it
ran to the end with the same inputs (so a second run reuses what the first built; `--fresh` redoes):

    tasks      generate `train_per_family` train and `heldout_per_family` held-out instances of the
               families (`harnessrl.tasks.generate`: held-out prompts never occur in train)
    sft        demonstrations (the harness with the scripted engine replaying each train task's
               reference) -> SFT (`train.sft`) -> `sft/model`
    eval-base  the untrained model on the held-out tasks, `eval.runs` runs each
    eval-sft   the SFT model, same tasks, same seeds
    rl         GRPO (`train.loop`) from `sft/model` on the train tasks -> `rl/checkpoints`
    eval-rl    the SFT+RL policy, same tasks, same seeds

Nothing is tuned on the held-out tasks: they are only evaluated, with the same seeds for each policy.
The table compares Pass@1 (mean of the per-run pass rates) +- its standard error over runs, and each
policy's paired difference over the row above (SFT over base, SFT+RL over SFT) with its 95% bootstrap
interval over tasks (`evaluate.paired`), computed from the stages' `eval.json` outcomes.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harnessrl.experiments.config import QuickstartSections
from harnessrl.experiments.stages import (
    Stages,
    evaluate_policy,
    generate_splits,
    load_split,
    stage_inputs,
    train_families,
    train_policy,
)
from harnessrl.formats.summaries import write_quickstart
from harnessrl.types import Task


async def _tasks(cfg: QuickstartSections, folder: Path) -> dict[str, str]:
    q = cfg.quickstart
    families = train_families(q.families)
    return generate_splits(families, q.train_per_family, q.heldout_per_family, q.task_seed, folder)


async def _eval(
    cfg: QuickstartSections, tasks: list[Task], label: str, model: str, weights: str | None, folder: Path
) -> Any:
    entry = await evaluate_policy(cfg, tasks, [cfg.quickstart.harness], label, model, weights, folder)
    return entry["summary"]


async def _rl(cfg: QuickstartSections, tasks: list[Task], sft_model: str, folder: Path) -> str:
    engine = cfg.engine.model_copy(update={"model": sft_model})
    t = cfg.train.model_copy(update={"out_dir": str(folder), "harnesses": [cfg.quickstart.harness]})
    _, ckpt = await train_policy(cfg.model_copy(update={"engine": engine, "train": t}), tasks, folder)
    return ckpt


async def run_quickstart(
    cfg: QuickstartSections, *, fresh: bool = False, echo: Callable[[str], None] = print
) -> dict[str, Any]:
    """All stages (module docstring); returns {policy: eval summary} plus stage seconds."""
    out = Path(cfg.quickstart.out_dir)
    st = Stages(out, fresh, echo)
    base = ("quickstart", "engine", "proxy", "sandbox", "rollout", "trace")
    paths = await st.run("tasks", stage_inputs(cfg, "quickstart"), lambda f: _tasks(cfg, f))
    train_tasks, held = load_split(paths["train"]), load_split(paths["heldout"])
    families = ", ".join(train_families(cfg.quickstart.families))
    echo(f"tasks: {len(train_tasks)} train, {len(held)} held-out ({families})")
    sft_cfg = cfg.model_copy(
        update={
            "sft": cfg.sft.model_copy(update={"harness": cfg.quickstart.harness, "out_dir": str(out / "sft")})
        }
    )
    sft_inputs = stage_inputs(sft_cfg, *base, "sft") | {"trainer": cfg.train.trainer.model_dump()}
    sft = await st.run("sft", sft_inputs, lambda f: _sft(sft_cfg, train_tasks))
    ev = stage_inputs(cfg, *base, "eval")
    results = {
        "base": await st.run("eval/base", ev, lambda f: _eval(cfg, held, "base", cfg.engine.model, None, f)),
        "sft": await st.run(
            "eval/sft", ev | sft_inputs, lambda f: _eval(cfg, held, "sft", sft["model"], None, f)
        ),
    }
    rl_inputs = sft_inputs | stage_inputs(cfg, "train")
    ckpt = await st.run("rl", rl_inputs, lambda f: _rl(cfg, train_tasks, sft["model"], f))
    results["sft+rl"] = await st.run(
        "eval/sft+rl", ev | rl_inputs, lambda f: _eval(cfg, held, "sft+rl", sft["model"], ckpt, f)
    )
    paired = paired_over_previous(out / "eval", list(results), cfg)
    summary = {"policies": results, "seconds": st.seconds, "heldout_tasks": len(held), "sft": sft}
    summary["paired"] = paired
    write_quickstart(out, summary)
    (out / "quickstart.md").write_text(table_markdown(results, cfg, paired), encoding="utf-8")
    track_table(out, cfg, results, paired)
    return summary


async def _sft(cfg: QuickstartSections, tasks: list[Task]) -> dict[str, Any]:
    from harnessrl.train.sft import sft

    result = await sft(cfg, tasks, echo=lambda s: print(s, flush=True))
    return {"model": result["model"], "log": result["log"], "dropped": result["dropped"]}


TABLE_HEADER = [
    "policy",
    "held-out Pass@1 +- se (range)",
    "paired difference over the row above [95% interval]",
    "mean score",
    "per-run pass rates",
    "statuses",
]


def paired_over_previous(
    eval_dir: Path, names: list[str], cfg: QuickstartSections
) -> dict[str, dict[str, Any]]:
    """Each policy's paired difference of Pass@1 over the policy in the row above it (sft over base,
    sft+rl over sft), from the outcomes in their `eval/<policy>/eval.json` (same tasks, same seeds),
    with `evaluate.paired`'s bootstrap interval over tasks (`eval.bootstrap_resamples`, `eval.seed`)."""
    from harnessrl.evaluate.paired import outcomes_of, paired
    from harnessrl.formats.eval_report import EVAL_FILE, read_eval

    e = cfg.eval
    reports = {n: read_eval(eval_dir / n / EVAL_FILE) for n in names}
    return {
        name: {"baseline": prev}
        | paired(
            outcomes_of(reports[prev], prev),
            outcomes_of(reports[name], name),
            resamples=e.bootstrap_resamples,
            seed=e.seed,
            confidence=e.confidence,
        )
        for prev, name in itertools.pairwise(names)
    }


def table_rows(results: dict[str, Any], paired: dict[str, Any] | None = None) -> list[list[str]]:
    from harnessrl.evaluate.paired import signed
    from harnessrl.evaluate.tables import fmt, spread, statuses

    def over(name: str) -> str:
        c = (paired or {}).get(name)
        if c is None:
            return "-"
        return f"{signed(c['difference'])} [{signed(c['lo'])}, {signed(c['hi'])}] over {c['baseline']}"

    return [
        [name, spread(s), over(name), fmt(s["mean_score"]), " ".join(f"{x:.3f}" for x in s["per_run"]),
         statuses(s)]
        for name, s in results.items()
    ]  # fmt: skip


def track_table(out: Path, cfg: QuickstartSections, results: dict[str, Any], paired: dict[str, Any]) -> None:
    """The before/after table and its numbers to `<out>/tb` and `tracking.report_to` (`report.trackers`)."""
    from harnessrl.report.trackers import open_trackers

    values = {f"pass1/{p}": s["pass1"] for p, s in results.items() if s.get("pass1") is not None}
    for p, c in paired.items():
        values |= {f"paired/{p}-{c['baseline']}/{k}": c[k] for k in ("difference", "lo", "hi")}
    with open_trackers(out, cfg.tracking, kind="experiment", config=cfg.model_dump(mode="json")) as t:
        t.scalars(0, values)
        t.table("quickstart/table", TABLE_HEADER, table_rows(results, paired))


def table_markdown(
    results: dict[str, Any], cfg: QuickstartSections, paired: dict[str, Any] | None = None
) -> str:
    from harnessrl.evaluate.paired import sentence

    lines = [f"Held-out generated tasks through `{cfg.quickstart.harness}`, {cfg.eval.runs} runs each.", ""]
    lines += ["| " + " | ".join(TABLE_HEADER) + " |", "|" + "---|" * len(TABLE_HEADER)]
    lines += ["| " + " | ".join(row) + " |" for row in table_rows(results, paired)]
    for name, c in (paired or {}).items():
        lines += ["", sentence({"policy": name, "baseline": c["baseline"], "overall": c})]
    return "\n".join(lines) + "\n"
