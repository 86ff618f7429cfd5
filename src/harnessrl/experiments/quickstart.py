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

import hashlib
import itertools
import json
import shutil
import time
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

from harnessrl.experiments.config import QuickstartSections, RunSections
from harnessrl.types import Task


class Stages:
    """Run-or-reuse: a stage's result is kept in `<out>/<name>/stage.json` with a digest of its inputs."""

    def __init__(self, out: Path, fresh: bool, echo: Callable[[str], None]) -> None:
        self.out, self.fresh, self.echo = out, fresh, echo
        self.seconds: dict[str, float] = {}
        """Seconds each stage took in this run (0 when reused)."""
        self.ran: dict[str, float] = {}
        """Seconds each stage took when it ran, in this run or the earlier one it was reused from."""

    async def run(self, name: str, inputs: Any, fn: Callable[[Path], Awaitable[Any]]) -> Any:
        folder = self.out / name
        stamp = folder / "stage.json"
        digest = hashlib.sha256(json.dumps(inputs, sort_keys=True, default=str).encode()).hexdigest()
        if not self.fresh and stamp.is_file():
            saved = json.loads(stamp.read_text(encoding="utf-8"))
            if saved.get("inputs") == digest:
                self.echo(f"[{name}] reused from {folder} (ran {saved['seconds']:.0f} s)")
                self.seconds[name] = 0.0
                self.ran[name] = float(saved["seconds"])
                return saved["result"]
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        self.echo(f"[{name}] running -> {folder}")
        t0 = time.perf_counter()
        result = await fn(folder)
        self.seconds[name] = self.ran[name] = time.perf_counter() - t0
        stamp.write_text(json.dumps({"inputs": digest, "seconds": self.seconds[name], "result": result}))
        self.echo(f"[{name}] done in {self.seconds[name]:.0f} s")
        return result


def _families(cfg: QuickstartSections) -> list[str]:
    from harnessrl.tasks.generate import TRAIN_FAMILIES

    return list(cfg.quickstart.families or TRAIN_FAMILIES)


async def _tasks(cfg: QuickstartSections, folder: Path) -> dict[str, str]:
    q = cfg.quickstart
    return generate_splits(_families(cfg), q.train_per_family, q.heldout_per_family, q.task_seed, folder)


def generate_splits(families: list[str], train: int, heldout: int, seed: int, folder: Path) -> dict[str, str]:
    """`train` train and `heldout` held-out instances of each family under `folder`; their paths."""
    from harnessrl.tasks.generate import generate

    generate(families, train, seed, folder, split="train")
    generate(families, heldout, seed, folder, split="heldout")
    return {"train": str(folder / "train"), "heldout": str(folder / "heldout_instances")}


def _load(path: str) -> list[Task]:
    from harnessrl.tasks import load_tasks

    return load_tasks(path).tasks


async def _eval(
    cfg: QuickstartSections, tasks: list[Task], label: str, model: str, weights: str | None, folder: Path
) -> Any:
    entry = await evaluate_policy(cfg, tasks, [cfg.quickstart.harness], label, model, weights, folder)
    return entry["summary"]


async def evaluate_policy(
    cfg: RunSections, tasks: list[Task], harnesses: list[str], label: str, model: str, weights: str | None,
    folder: Path,
) -> dict[str, Any]:  # fmt: skip
    """One policy (a model folder, plus trainer weights) on every (task, harness), report into `folder`;
    returns its report entry."""
    from harnessrl.evaluate import Policy, evaluate, write_report

    run_cfg = cfg.model_copy(update={"eval": cfg.eval.model_copy(update={"out_dir": str(folder)})})
    policy = Policy(label, model, Path(weights) if weights else None)
    report = await evaluate(run_cfg, tasks, harnesses=harnesses, policies=[policy])
    write_report(report, folder, cfg.tracking, run_cfg.model_dump(mode="json"))
    entry: dict[str, Any] = report["policies"][label]
    return entry


async def _rl(cfg: QuickstartSections, tasks: list[Task], sft_model: str, folder: Path) -> str:
    from harnessrl.formats.checkpoints import latest_checkpoint
    from harnessrl.train.loop import train

    engine = cfg.engine.model_copy(update={"model": sft_model})
    t = cfg.train.model_copy(update={"out_dir": str(folder), "harnesses": [cfg.quickstart.harness]})
    await train(
        cfg.model_copy(update={"engine": engine, "train": t}), tasks, echo=lambda s: print(s, flush=True)
    )
    ckpt = latest_checkpoint(folder / "checkpoints")
    assert ckpt is not None  # the loop always saves after its last step
    return str(ckpt)


async def cold_start(
    cfg: RunSections, tasks: list[Task], demos: Mapping[str, str], folder: Path, echo: Callable[[str], None]
) -> dict[str, Any]:
    """The experiments' shared cold start: scripted demonstrations of `tasks` through each harness of
    `demos` ({folder name under `<folder>/demos/`: harness}), then one SFT over all of them. Returns
    the SFT model, its log, the dropped counts and, per harness, [demonstrations solved, run]."""
    from harnessrl.train.sft import make_demonstrations, sft

    demo_dirs, solved = [], {}
    for name, harness in demos.items():
        demo_cfg = cfg.model_copy(update={"sft": cfg.sft.model_copy(update={"harness": harness})})
        dest = folder / "demos" / name
        rollouts = await make_demonstrations(demo_cfg, tasks, dest)
        ok = sum(r.status.value == "ok" and (r.reward or 0.0) >= cfg.sft.min_score for r in rollouts)
        echo(f"sft: {harness}: {ok}/{len(rollouts)} demonstrations solved their task")
        solved[harness] = [ok, len(rollouts)]
        demo_dirs.append(str(dest))
    sft_cfg = cfg.model_copy(
        update={
            "sft": cfg.sft.model_copy(
                update={"demonstrations": False, "rollouts": demo_dirs, "out_dir": str(folder)}
            )
        }
    )
    result = await sft(sft_cfg, tasks, echo=echo)
    return {"model": result["model"], "log": result["log"], "dropped": result["dropped"], "solved": solved}


def _inputs(cfg: RunSections, *sections: str) -> dict[str, Any]:
    return {s: getattr(cfg, s).model_dump() for s in sections}


async def run_quickstart(
    cfg: QuickstartSections, *, fresh: bool = False, echo: Callable[[str], None] = print
) -> dict[str, Any]:
    """All stages (module docstring); returns {policy: eval summary} plus stage seconds."""
    out = Path(cfg.quickstart.out_dir)
    st = Stages(out, fresh, echo)
    base = ("quickstart", "engine", "proxy", "sandbox", "rollout", "trace")
    paths = await st.run("tasks", _inputs(cfg, "quickstart"), lambda f: _tasks(cfg, f))
    train_tasks, held = _load(paths["train"]), _load(paths["heldout"])
    echo(f"tasks: {len(train_tasks)} train, {len(held)} held-out ({', '.join(_families(cfg))})")
    sft_cfg = cfg.model_copy(
        update={
            "sft": cfg.sft.model_copy(update={"harness": cfg.quickstart.harness, "out_dir": str(out / "sft")})
        }
    )
    sft_inputs = _inputs(sft_cfg, *base, "sft") | {"trainer": cfg.train.trainer.model_dump()}
    sft = await st.run("sft", sft_inputs, lambda f: _sft(sft_cfg, train_tasks))
    ev = _inputs(cfg, *base, "eval")
    results = {
        "base": await st.run("eval/base", ev, lambda f: _eval(cfg, held, "base", cfg.engine.model, None, f)),
        "sft": await st.run(
            "eval/sft", ev | sft_inputs, lambda f: _eval(cfg, held, "sft", sft["model"], None, f)
        ),
    }
    rl_inputs = sft_inputs | _inputs(cfg, "train")
    ckpt = await st.run("rl", rl_inputs, lambda f: _rl(cfg, train_tasks, sft["model"], f))
    results["sft+rl"] = await st.run(
        "eval/sft+rl", ev | rl_inputs, lambda f: _eval(cfg, held, "sft+rl", sft["model"], ckpt, f)
    )
    paired = paired_over_previous(out / "eval", list(results), cfg)
    summary = {"policies": results, "seconds": st.seconds, "heldout_tasks": len(held), "sft": sft}
    summary["paired"] = paired
    (out / "quickstart.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
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

    e = cfg.eval
    reports = {n: json.loads((eval_dir / n / "eval.json").read_text(encoding="utf-8")) for n in names}
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
