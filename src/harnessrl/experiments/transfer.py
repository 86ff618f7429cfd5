"""The harness-transfer experiment: train through harness A, evaluate through harness B.

    scripts/harness_transfer                                   # configs/transfer.toml
    scripts/harness_transfer -o 'transfer.seeds=[0]' -o train.steps=2

Stages (each reused when its inputs did not change, as in `harnessrl quickstart`; `--fresh` redoes):

    tasks              `train_per_family` train and `heldout_per_family` held-out instances of the
                       train families, and `heldout_family` instances of the held-out family
    sft                the shared cold start: demonstrations through every training harness (the
                       scripted engine replaying each train task's reference through that harness's
                       own shell tool: Claude Code's `Bash` calls come from Claude Code itself), one
                       SFT on all of them
    eval/base          the untrained model (`transfer.base_model_row`)
    eval/cold-start    the cold start
    arm-<arm>-s<seed>  GRPO from the cold start through the arm's harnesses, `train.seed = seed`; every
                       arm has the same budget (a drawn task runs under one of its harnesses)
    eval/<arm>-s<seed> the policy

Every policy is evaluated through every `transfer.eval_harnesses` on the same held-out tasks with the
same seeds per (task, harness, run) (`harnessrl.evaluate`), so all comparisons are paired. Nothing is
tuned on the held-out tasks or on the evaluation harnesses.

Output (`transfer.json`, `transfer.md`; `harnessrl report <out_dir>` draws the heat map): per task
group (`heldout`: held-out instances of the train families; `heldout_family`: the family never trained
on), a policy x evaluation-harness matrix of Pass@1 (an arm's: the mean over its seeds) with the
paired difference against the cold start and its 95% bootstrap interval over tasks (`evaluate.paired`;
an arm's d_t pooled over its seeds), the diagonal comparisons (on each training harness, the arm that
trained only there against each other arm, paired seed by seed), and each stage's wall time.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from harnessrl.config_section import ConfigError
from harnessrl.evaluate.stats import Outcome
from harnessrl.experiments.config import TransferSections
from harnessrl.experiments.quickstart import Stages, _inputs, _load, cold_start, evaluate_policy
from harnessrl.types import Task

TABLE_FILE = "transfer.md"
GROUPS = {"heldout": "held-out instances of the train families", "heldout_family": "held-out family"}
COLD = "cold-start"


def families(cfg: TransferSections) -> list[str]:
    from harnessrl.tasks.generate import TRAIN_FAMILIES

    return list(cfg.transfer.families or TRAIN_FAMILIES)


def sft_harnesses(cfg: TransferSections) -> list[str]:
    """The cold start's demonstration harnesses: `transfer.sft_harnesses`, else every arm's, in order."""
    if cfg.transfer.sft_harnesses:
        return list(cfg.transfer.sft_harnesses)
    return list(dict.fromkeys(h for hs in cfg.transfer.arms.values() for h in hs))


def check(cfg: TransferSections) -> None:
    """Fail before anything runs on a configuration the experiment cannot use."""
    from harnessrl.harnesses import get_harness

    t = cfg.transfer
    if not t.arms:
        raise ConfigError("transfer.arms: no arm to train")
    if not t.eval_harnesses:
        raise ConfigError("transfer.eval_harnesses: no harness to evaluate through")
    for name, harnesses in t.arms.items():
        if not harnesses:
            raise ConfigError(f"transfer.arms.{name}: no harness")
        if name in (COLD, "base") or "/" in name:
            raise ConfigError(f"transfer.arms: {name!r} cannot name an arm")
    from harnessrl.evaluate.heldout import EXCLUDED
    from harnessrl.tasks.generate import TRAIN_FAMILIES

    wrong = [f for f in t.families if f not in TRAIN_FAMILIES]
    if wrong:
        raise ConfigError(
            f"transfer.families: {wrong} not a train family (train families: {list(TRAIN_FAMILIES)})"
        )

    if t.heldout_seed in {s for s, _, _ in EXCLUDED} or t.heldout_seed == t.task_seed:
        raise ConfigError(f"transfer.heldout_seed: {t.heldout_seed} makes task sets the project trains on")
    if len(set(t.seeds)) != len(t.seeds):
        raise ConfigError(f"transfer.seeds: repeated seed in {t.seeds}")
    for h in [*sft_harnesses(cfg), *t.eval_harnesses]:
        try:
            get_harness(h)
        except Exception as e:
            raise ConfigError(f"transfer: {e}") from None
    for name in t.arm_train:
        if name not in t.arms:
            raise ConfigError(f"transfer.arm_train.{name}: no such arm (arms: {list(t.arms)})")
        arm_config(cfg, name, t.seeds[0], cfg.engine.model, Path(t.out_dir))  # its fields' errors


HOW = ("attention", "token_budget", "share_prefixes")
"""`train.trainer` settings that change how a step is computed, not what it computes (exact attention
implementations, micro-batch size, prefix sharing): not stage inputs, so a run that changes them (to
fit memory, say) keeps its finished stages."""


def trainer_inputs(cfg: TransferSections) -> dict[str, Any]:
    return {k: v for k, v in cfg.train.trainer.model_dump().items() if k not in HOW}


def train_inputs_of(cfg: TransferSections) -> dict[str, Any]:
    """The `train` section as a stage input, without the `HOW` settings."""
    return {"train": cfg.train.model_dump() | {"trainer": trainer_inputs(cfg)}}


def policy_name(arm: str, seed: int) -> str:
    return f"{arm}-s{seed}"


async def _tasks(cfg: TransferSections, folder: Path) -> dict[str, str]:
    """Train instances from `task_seed`; the held-out set from `heldout_seed` (`evaluate.heldout`)."""
    from harnessrl.evaluate.heldout import heldout_set
    from harnessrl.tasks.generate import generate

    t = cfg.transfer
    generate(families(cfg), t.train_per_family, t.task_seed, folder, split="train")
    heldout_set(folder, t.heldout_seed, t.heldout_per_family, t.heldout_family, families(cfg))
    paths = {"train": str(folder / "train"), "heldout": str(folder / "heldout_instances")}
    if t.rl_per_family:
        rl_tasks(families(cfg), t.train_per_family, t.rl_per_family, t.task_seed, folder / "rl")
        paths["rl"] = str(folder / "rl")
    if t.heldout_family:
        paths["heldout_family"] = str(folder / "heldout_family")
    return paths


def rl_tasks(names: Sequence[str], demonstrated: int, n: int, seed: int, dest: Path) -> None:
    """`n` train instances per family after the first `demonstrated` of the same stream, each distinct
    from those and from each other (ids go on from `demonstrated`); a ValueError if a family has
    fewer."""
    from harnessrl.evaluate.heldout import identity
    from harnessrl.tasks.generate import TASK_FAMILIES, instances, task_id
    from harnessrl.tasks.generate.base import write_instance

    for family in names:
        stream = instances(family, "train", seed, demonstrated + 4 * n)
        seen = {identity(i) for i in stream[:demonstrated]}
        kept = 0
        for index, inst in enumerate(stream[demonstrated:], start=demonstrated):
            if identity(inst) in seen:
                continue
            seen.add(identity(inst))
            generator = {"family": family, "split": "train", "seed": seed, "index": index, "rl": True}
            write_instance(
                TASK_FAMILIES[family], inst, task_id(family, "train", seed, index), dest, generator
            )
            kept += 1
            if kept == n:
                break
        else:
            raise ValueError(
                f"{family}: only {kept} train instances beyond the first {demonstrated} (asked {n})"
            )


async def _sft(
    cfg: TransferSections, tasks: list[Task], folder: Path, echo: Callable[[str], None]
) -> dict[str, Any]:
    """Demonstrations through every `sft_harnesses(cfg)`, then one SFT over all of them."""
    return await cold_start(cfg, tasks, {h.replace(":", "_"): h for h in sft_harnesses(cfg)}, folder, echo)


def arm_config(cfg: TransferSections, arm: str, seed: int, start: str, folder: Path) -> TransferSections:
    """The `train` config of one arm and seed: its harnesses, one per drawn task, from `start`, with
    the arm's `transfer.arm_train` fields (validated: a wrong name or value, or a field set here for
    every arm, is a `ConfigError`)."""
    from pydantic import ValidationError

    from harnessrl.train.config import TrainConfig

    engine = cfg.engine.model_copy(update={"model": start})
    sets = {
        "out_dir": str(folder),
        "harnesses": list(cfg.transfer.arms[arm]),
        "harnesses_per_task": 1,
        "harness_space": None,
        "seed": seed,
        "resume": False,
    }
    own = cfg.transfer.arm_train.get(arm, {})
    fixed = sorted(set(own) & set(sets))
    if fixed:
        raise ConfigError(f"transfer.arm_train.{arm}: {fixed} are set by the experiment per arm")
    try:
        # only what was set (a nested section merged key by key), so the loop still tells the fields
        # a user set from those it fills in itself (`train.trainer.lr` and the like)
        t = TrainConfig.model_validate(_merged(cfg.train.model_dump(exclude_unset=True), own) | sets)
    except ValidationError as e:
        wrong = "; ".join(
            f"{'.'.join(str(x) for x in err['loc'])}: {err['msg']} (got {err.get('input')!r})"
            for err in e.errors()
        )
        raise ConfigError(f"transfer.arm_train.{arm}: {wrong}") from None
    return cfg.model_copy(update={"engine": engine, "train": t})


def _merged(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in over.items():
        b = out.get(k)
        out[k] = _merged(b, v) if isinstance(b, Mapping) and isinstance(v, Mapping) else v
    return out


async def _arm(
    cfg: TransferSections, arm: str, seed: int, tasks: list[Task], start: str, folder: Path
) -> dict[str, Any]:
    from harnessrl.formats.checkpoints import latest_checkpoint
    from harnessrl.train.loop import train

    t0 = time.perf_counter()
    records = await train(
        arm_config(cfg, arm, seed, start, folder), tasks, echo=lambda s: print(s, flush=True)
    )
    ckpt = latest_checkpoint(folder / "checkpoints")
    assert ckpt is not None  # the loop always saves after its last step
    return {
        "checkpoint": str(ckpt),
        "seconds": time.perf_counter() - t0,
        "steps": len(records),
        "skipped_steps": [r["step"] for r in records if r.get("skip_reason")],
    }


async def _eval(
    cfg: TransferSections, tasks: list[Task], label: str, model: str, weights: str | None, folder: Path
) -> dict[str, Any]:
    entry = await evaluate_policy(
        cfg, tasks, list(cfg.transfer.eval_harnesses), label, model, weights, folder
    )
    return {"summary": entry["summary"], "by_harness": entry["by_harness"]}


async def run_transfer(
    cfg: TransferSections, *, fresh: bool = False, echo: Callable[[str], None] = print
) -> dict[str, Any]:
    """All stages (module docstring); writes and returns the summary."""
    check(cfg)
    out = Path(cfg.transfer.out_dir)
    st = Stages(out, fresh, echo)
    base = ("engine", "proxy", "sandbox", "rollout", "trace")
    dump = cfg.transfer.model_dump()
    train_inputs = {k: dump[k] for k in ("families", "train_per_family", "task_seed")}
    eval_tasks = train_inputs | {k: dump[k] for k in ("heldout_per_family", "heldout_family", "heldout_seed")}
    task_inputs = eval_tasks | {"rl_per_family": dump["rl_per_family"]}
    paths = await st.run("tasks", task_inputs, lambda f: _tasks(cfg, f))
    train_tasks = _load(paths["train"])
    rl = _load(paths["rl"]) if "rl" in paths else train_tasks
    groups = {g: _load(paths[g]) for g in GROUPS if g in paths}
    held = [t for ts in groups.values() for t in ts]
    echo(
        f"tasks: {len(train_tasks)} train (demonstrated), {len(rl)} for RL"
        + (" (the same)" if rl is train_tasks else "")
        + ", "
        + ", ".join(f"{len(ts)} {g}" for g, ts in groups.items())
        + f"; eval harnesses: {', '.join(cfg.transfer.eval_harnesses)}"
    )
    sft_inputs = _inputs(cfg, *base, "sft") | train_inputs | {
        "harnesses": sft_harnesses(cfg), "trainer": trainer_inputs(cfg),
        "options": {h: cfg.train.harness_options.get(h, {}) for h in sft_harnesses(cfg)}}  # fmt: skip
    sft = await st.run("sft", sft_inputs, lambda f: _sft(cfg, train_tasks, f, echo))
    ev = _inputs(cfg, *base, "eval") | {"harnesses": cfg.transfer.eval_harnesses, "tasks": eval_tasks}
    evals: dict[str, Any] = {}
    if cfg.transfer.base_model_row:
        evals["base"] = await st.run(
            "eval/base", ev, partial(_eval, cfg, held, "base", cfg.engine.model, None)
        )
    evals[COLD] = await st.run(
        "eval/" + COLD, ev | sft_inputs, partial(_eval, cfg, held, COLD, sft["model"], None)
    )
    arms: dict[str, Any] = {}
    for seed in cfg.transfer.seeds:
        for arm in cfg.transfer.arms:
            name = policy_name(arm, seed)
            arm_inputs = (
                sft_inputs
                | train_inputs_of(cfg)
                | {"arm": cfg.transfer.arms[arm], "seed": seed, "rl_per_family": dump["rl_per_family"]}
                | ({"arm_train": cfg.transfer.arm_train[arm]} if cfg.transfer.arm_train.get(arm) else {})
            )
            arms[name] = await st.run(
                f"arm-{name}", arm_inputs, partial(_arm, cfg, arm, seed, rl, sft["model"])
            )
            evals[name] = await st.run(
                f"eval/{name}", ev | arm_inputs,
                partial(_eval, cfg, held, name, sft["model"], arms[name]["checkpoint"]),
            )  # fmt: skip
    summary = {
        "date": time.strftime("%Y-%m-%d"),
        "arms": cfg.transfer.arms,
        "arm_train": {a: fields for a, fields in cfg.transfer.arm_train.items() if fields},
        "seeds": cfg.transfer.seeds,
        "eval_harnesses": cfg.transfer.eval_harnesses,
        "groups": {g: [t.id for t in ts] for g, ts in groups.items()},
        "train_tasks": len(train_tasks),
        "rl_tasks": len(rl) if rl is not train_tasks else 0,
        "budget": {k: getattr(cfg.train, k) for k in ("steps", "tasks_per_step", "group_size")},
        "eval_runs": cfg.eval.runs,
        "sft": sft,
        "training": arms,
        "seconds": st.ran,
    }
    summary |= matrices(out, summary, cfg)
    summary["time_split"] = time_split(out, summary, cfg.transfer.base_model_row)
    write_tables(out, summary)
    return summary


def time_split(out: Path, summary: Mapping[str, Any], base_row: bool = False) -> dict[str, Any]:
    """Where the time went, read back from the stage folders (so a rerun that reuses every stage
    still reports it): per arm and seed the mean seconds of each training-step phase
    (`metrics.jsonl` `time`), and per stage the rollout split per harness (`evaluate.timing`)."""
    from harnessrl.evaluate.timing import folder_times
    from harnessrl.formats.metrics import METRICS_FILE, read_metrics

    steps: dict[str, dict[str, float]] = {}
    groups: dict[str, dict[str, float]] = {}
    rollouts: dict[str, Any] = {"sft demonstrations": folder_times(out / "sft" / "demos")}
    for name in summary["training"]:
        records, _ = read_metrics(out / f"arm-{name}" / METRICS_FILE)
        laps = [r["time"] for r in records if isinstance(r.get("time"), dict)]
        keys = sorted({k for lap in laps for k, v in lap.items() if isinstance(v, int | float)})
        steps[name] = {k: round(sum(float(lap.get(k, 0.0)) for lap in laps) / len(laps), 1) for k in keys}
        groups[name] = step_groups(records)
        rollouts[f"train {name}"] = folder_times(out / f"arm-{name}" / "rollouts")
    for policy in [*(["base"] if base_row else []), COLD, *summary["training"]]:
        rollouts[f"eval {policy}"] = folder_times(out / "eval" / policy)
    return {"train_steps": steps, "train_groups": groups, "rollouts": rollouts}


GROUP_KEYS = ("scheduled", "informative", "resampled", "trained", "zero_variance")
"""`metrics.jsonl` `groups` counts averaged per step by `step_groups` (`scheduled`: every group run,
the resampled ones included)."""


def step_groups(records: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """Mean per step of a training run's rollouts and GRPO group counts (`GROUP_KEYS`), so runs with
    and without dynamic sampling compare what a step cost and what it trained."""
    if not records:
        return {}

    def mean(values: Sequence[float]) -> float:
        return round(sum(values) / len(records), 2)

    counts = {"rollouts": mean([float(r.get("rollouts", 0)) for r in records])}
    for k in GROUP_KEYS:
        counts[k] = mean([float((r.get("groups") or {}).get(k, 0)) for r in records])
    return counts


def read_outcomes(out: Path, policy: str) -> list[Outcome]:
    from harnessrl.evaluate.paired import outcomes_of
    from harnessrl.formats.eval_report import EVAL_FILE, read_eval

    return outcomes_of(read_eval(out / "eval" / policy / EVAL_FILE), policy)


def matrices(out: Path, summary: Mapping[str, Any], cfg: TransferSections) -> dict[str, Any]:
    """The matrices and diagonal comparisons of a finished run, from its `eval/<policy>/eval.json`."""
    policies = (["base"] if cfg.transfer.base_model_row else []) + [COLD]
    outcomes = {p: read_outcomes(out, p) for p in policies}
    for arm in summary["arms"]:
        for seed in summary["seeds"]:
            outcomes[policy_name(arm, seed)] = read_outcomes(out, policy_name(arm, seed))
    e = cfg.eval
    kw = {"resamples": e.bootstrap_resamples, "seed": e.seed, "confidence": e.confidence}
    return transfer_tables(outcomes, summary["arms"], summary["seeds"], summary["eval_harnesses"],
                           summary["groups"], **kw)  # fmt: skip


def _pass1(outs: Sequence[Outcome]) -> float | None:
    return sum(o.passed for o in outs) / len(outs) if outs else None


def transfer_tables(
    outcomes: Mapping[str, Sequence[Outcome]],
    arms: Mapping[str, Sequence[str]],
    seeds: Sequence[int],
    harnesses: Sequence[str],
    groups: Mapping[str, Sequence[str]],
    **kw: Any,
) -> dict[str, Any]:
    """Pure: {policy: outcomes} (policies `base`?, `cold-start`, `<arm>-s<seed>`) -> per group the
    matrix {row: {harness: cell}} and the diagonal comparisons (module docstring).

    A cell: `pass1` (an arm's: the mean over seeds of its per-seed Pass@1), `per_seed`, `n` (outcomes
    per seed), and for every row but the cold start `vs_cold` = `evaluate.paired.pooled` over the seeds
    (d_t averaged over seeds, bootstrap over tasks)."""
    from harnessrl.evaluate.paired import pooled

    def select(policy: str, group: Sequence[str], harness: str) -> list[Outcome]:
        ids = set(group)
        return [o for o in outcomes[policy] if o.harness == harness and o.task_id in ids]

    rows: dict[str, list[str]] = {p: [p] for p in ("base", COLD) if p in outcomes}
    rows |= {arm: [policy_name(arm, s) for s in seeds] for arm in arms}
    result: dict[str, Any] = {"matrix": {}, "diagonal": {}}
    for group, ids in groups.items():
        matrix: dict[str, dict[str, Any]] = {}
        for row, policies in rows.items():
            matrix[row] = {}
            for h in harnesses:
                per = [_pass1(select(p, ids, h)) for p in policies]
                vals = [x for x in per if x is not None]
                cell: dict[str, Any] = {
                    "pass1": sum(vals) / len(vals) if vals else None,
                    "per_seed": per,
                    "n": len(select(policies[0], ids, h)),
                }
                if row != COLD and vals:
                    cold = select(COLD, ids, h)
                    cell["vs_cold"] = pooled([(cold, select(p, ids, h)) for p in policies], **kw)
                matrix[row][h] = cell
        result["matrix"][group] = matrix
        diagonal = []
        for h in harnesses:
            home = [a for a, hs in arms.items() if list(hs) == [h]]
            for a in home:
                for other in arms:
                    if other == a:
                        continue
                    pairs = [(select(policy_name(other, s), ids, h), select(policy_name(a, s), ids, h))
                             for s in seeds]  # fmt: skip
                    if not pairs[0][0]:
                        continue
                    diagonal.append({"harness": h, "arm": a, "other": other} | pooled(pairs, **kw))
        result["diagonal"][group] = diagonal
    return result


def _cell_text(cell: Mapping[str, Any]) -> str:
    from harnessrl.evaluate.paired import signed

    if cell.get("pass1") is None:
        return "-"
    text = f"{cell['pass1']:.3f}"
    c = cell.get("vs_cold")
    if c is not None:
        text += f" ({signed(c['difference'])} [{signed(c['lo'])}, {signed(c['hi'])}])"
    return text


def _arm_train_text(summary: Mapping[str, Any], arm: str) -> str:
    fields = (summary.get("arm_train") or {}).get(arm)
    return " (" + ", ".join(f"train.{k} = {v}" for k, v in fields.items()) + ")" if fields else ""


def table_markdown(summary: Mapping[str, Any]) -> str:
    """The matrices, the diagonal comparisons and the stage times as markdown."""
    from harnessrl.evaluate.paired import signed

    hs = summary["eval_harnesses"]
    trained = {h for arm in summary["arms"].values() for h in arm}
    lines = [
        f"Harness transfer, {summary['date']}: arms "
        + "; ".join(
            f"`{a}` = {', '.join(h)}" + _arm_train_text(summary, a) for a, h in summary["arms"].items()
        )
        + f"; seeds {summary['seeds']}; budget per arm {summary['budget']['steps']} steps x "
        f"{summary['budget']['tasks_per_step']} tasks x {summary['budget']['group_size']} rollouts; "
        f"{summary['eval_runs']} eval run(s) per (task, harness). Cells: Pass@1 (arms: mean over seeds) "
        "and, in brackets, the paired difference against the cold start with its 95% bootstrap "
        "interval over tasks. Harnesses no arm trained in are marked *.",
    ]
    for group, matrix in summary["matrix"].items():
        n = len(summary["groups"][group])
        lines += ["", f"### {GROUPS.get(group, group)} ({n} tasks)", ""]
        lines += ["| policy | " + " | ".join(h + ("" if h in trained else " *") for h in hs) + " |"]
        lines += ["|---|" + "---|" * len(hs)]
        lines += [
            f"| {row} | " + " | ".join(_cell_text(cells[h]) for h in hs) + " |"
            for row, cells in matrix.items()
        ]
        diag = summary["diagonal"].get(group, [])
        if diag:
            head = "Diagonal: on each training harness, the arm that trained only there against each other"
            lines += ["", head + " arm (paired seed by seed):", ""]
            lines += [
                "| evaluated in | arm | over | difference [95% interval] | tasks up / down |",
                "|---|---|---|---|---|",
            ]
            for d in diag:
                verdict = "excludes 0" if d["excludes_zero"] else "includes 0"
                lines.append(
                    f"| {d['harness']} | {d['arm']} | {d['other']} | {signed(d['difference'])} "
                    f"[{signed(d['lo'])}, {signed(d['hi'])}] ({verdict}) | {d['up']} / {d['down']} |"
                )
    split = summary.get("time_split")
    if split:
        from harnessrl.evaluate.timing import times_markdown

        lines += [
            "",
            "### Where the time went",
            "",
            "Mean seconds per training step (`metrics.jsonl` `time`):",
            "",
        ]
        keys = sorted({k for t in split["train_steps"].values() for k in t})
        lines += ["| run | " + " | ".join(keys) + " |", "|---|" + "---|" * len(keys)]
        lines += [f"| {n} | " + " | ".join(f"{t.get(k, 0.0):.1f}" for k in keys) + " |"
                  for n, t in split["train_steps"].items()]  # fmt: skip
        per = split.get("train_groups") or {}
        if per:
            cols = ["rollouts", *GROUP_KEYS]
            lines += ["", "Mean rollouts and GRPO groups per training step (`metrics.jsonl` `groups`):", ""]
            lines += ["| run | " + " | ".join(cols) + " |", "|---|" + "---|" * len(cols)]
            lines += [f"| {n} | " + " | ".join(f"{g.get(k, 0.0):g}" for k in cols) + " |"
                      for n, g in per.items()]  # fmt: skip
        lines += ["", "Mean seconds per rollout (`evaluate.timing`):"]
        for stage, times in split["rollouts"].items():
            if times:
                lines += ["", f"{stage}:", "", times_markdown(times).rstrip("\n")]
    secs = summary.get("seconds", {})
    if secs:
        total = (
            f"Wall time: {sum(secs.values()) / 60:.1f} min (each stage when it ran, reused ones included): "
        )
        lines += ["", total + ", ".join(f"{k} {v:.0f} s" for k, v in secs.items())]
    return "\n".join(lines) + "\n"


def write_tables(out: Path, summary: dict[str, Any]) -> None:
    from harnessrl.formats.transfer import write_transfer

    write_transfer(out, summary)
    (out / TABLE_FILE).write_text(table_markdown(summary), encoding="utf-8")
