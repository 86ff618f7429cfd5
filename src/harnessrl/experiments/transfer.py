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

Output (`transfer.json`, `transfer.md`, from `experiments.transfer_report`; `harnessrl report <out_dir>`
draws the heat map): per task group (`heldout`: held-out instances of the train families;
`heldout_family`: the family never trained on), a policy x evaluation-harness matrix of Pass@1 (an
arm's: the mean over its seeds) with the paired difference against the cold start and its 95%
bootstrap interval over tasks (`evaluate.paired`; an arm's d_t pooled over its seeds), the diagonal
comparisons (on each training harness, the arm that trained only there against each other arm, paired
seed by seed), and each stage's wall time.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from harnessrl.config_section import ConfigError
from harnessrl.experiments.config import TransferSections
from harnessrl.experiments.stages import (
    Stages,
    cold_start,
    evaluate_policy,
    load_split,
    stage_inputs,
    train_families,
    train_policy,
)
from harnessrl.experiments.transfer_report import (
    COLD,
    GROUPS,
    matrices,
    policy_name,
    time_split,
    write_tables,
)
from harnessrl.types import Task

BASE = ("engine", "proxy", "sandbox", "rollout", "trace")
"""Sections every stage's inputs hold."""


def families(cfg: TransferSections) -> list[str]:
    return train_families(cfg.transfer.families)


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
    from harnessrl.tasks.generate import NAMED_TRAIN_FAMILIES

    wrong = [f for f in t.families if f not in NAMED_TRAIN_FAMILIES]
    if wrong:
        raise ConfigError(
            f"transfer.families: {wrong} not a train family (train families: {list(NAMED_TRAIN_FAMILIES)})"
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
    t0 = time.perf_counter()
    records, ckpt = await train_policy(arm_config(cfg, arm, seed, start, folder), tasks, folder)
    return {
        "checkpoint": ckpt,
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


@dataclass(frozen=True)
class TaskSets:
    """What the `tasks` stage generated, loaded."""

    train: list[Task]
    """Demonstrated train tasks."""
    rl: list[Task]
    """RL tasks (`train` itself unless `transfer.rl_per_family`)."""
    groups: dict[str, list[Task]]
    """Held-out tasks per group (`GROUPS`)."""

    @property
    def held(self) -> list[Task]:
        return [t for ts in self.groups.values() for t in ts]


def task_inputs(cfg: TransferSections) -> dict[str, dict[str, Any]]:
    """The `transfer` fields each kind of stage depends on: `train` (the demonstrated tasks), `eval`
    (the held-out sets too) and `tasks` (every generated set)."""
    dump = cfg.transfer.model_dump()
    train = {k: dump[k] for k in ("families", "train_per_family", "task_seed")}
    evals = train | {k: dump[k] for k in ("heldout_per_family", "heldout_family", "heldout_seed")}
    return {"train": train, "eval": evals, "tasks": evals | {"rl_per_family": dump["rl_per_family"]}}


async def _task_sets(cfg: TransferSections, st: Stages, echo: Callable[[str], None]) -> TaskSets:
    """Stage `tasks`, loaded, with one line saying what it holds."""
    paths = await st.run("tasks", task_inputs(cfg)["tasks"], lambda f: _tasks(cfg, f))
    train = load_split(paths["train"])
    sets = TaskSets(
        train=train,
        rl=load_split(paths["rl"]) if "rl" in paths else train,
        groups={g: load_split(paths[g]) for g in GROUPS if g in paths},
    )
    echo(
        f"tasks: {len(sets.train)} train (demonstrated), {len(sets.rl)} for RL"
        + (" (the same)" if sets.rl is sets.train else "")
        + ", "
        + ", ".join(f"{len(ts)} {g}" for g, ts in sets.groups.items())
        + f"; eval harnesses: {', '.join(cfg.transfer.eval_harnesses)}"
    )
    return sets


def sft_inputs(cfg: TransferSections) -> dict[str, Any]:
    """The cold start's stage inputs."""
    harnesses = sft_harnesses(cfg)
    return stage_inputs(cfg, *BASE, "sft") | task_inputs(cfg)["train"] | {
        "harnesses": harnesses, "trainer": trainer_inputs(cfg),
        "options": {h: cfg.train.harness_options.get(h, {}) for h in harnesses}}  # fmt: skip


def arm_inputs(cfg: TransferSections, arm: str, seed: int) -> dict[str, Any]:
    """One arm and seed's stage inputs (beyond the cold start's)."""
    own = cfg.transfer.arm_train.get(arm)
    return (
        train_inputs_of(cfg)
        | {"arm": cfg.transfer.arms[arm], "seed": seed, "rl_per_family": cfg.transfer.rl_per_family}
        | ({"arm_train": own} if own else {})
    )


async def _policies(cfg: TransferSections, st: Stages, sets: TaskSets, sft: dict[str, Any]) -> dict[str, Any]:
    """Stages `eval/base`, `eval/cold-start` and, per seed and arm, `arm-<arm>-s<seed>` and its eval;
    returns the arms' training results."""
    held, cold = sets.held, sft_inputs(cfg)
    ev = stage_inputs(cfg, *BASE, "eval") | {
        "harnesses": cfg.transfer.eval_harnesses, "tasks": task_inputs(cfg)["eval"]}  # fmt: skip
    if cfg.transfer.base_model_row:
        await st.run("eval/base", ev, partial(_eval, cfg, held, "base", cfg.engine.model, None))
    await st.run("eval/" + COLD, ev | cold, partial(_eval, cfg, held, COLD, sft["model"], None))
    arms: dict[str, Any] = {}
    for seed in cfg.transfer.seeds:
        for arm in cfg.transfer.arms:
            name, inputs = policy_name(arm, seed), cold | arm_inputs(cfg, arm, seed)
            arms[name] = await st.run(
                f"arm-{name}", inputs, partial(_arm, cfg, arm, seed, sets.rl, sft["model"])
            )
            ckpt = arms[name]["checkpoint"]
            await st.run(f"eval/{name}", ev | inputs, partial(_eval, cfg, held, name, sft["model"], ckpt))
    return arms


def _summary(
    cfg: TransferSections, sets: TaskSets, sft: dict[str, Any], arms: dict[str, Any]
) -> dict[str, Any]:
    return {
        "date": time.strftime("%Y-%m-%d"),
        "arms": cfg.transfer.arms,
        "arm_train": {a: fields for a, fields in cfg.transfer.arm_train.items() if fields},
        "seeds": cfg.transfer.seeds,
        "eval_harnesses": cfg.transfer.eval_harnesses,
        "groups": {g: [t.id for t in ts] for g, ts in sets.groups.items()},
        "train_tasks": len(sets.train),
        "rl_tasks": len(sets.rl) if sets.rl is not sets.train else 0,
        "budget": {k: getattr(cfg.train, k) for k in ("steps", "tasks_per_step", "group_size")},
        "eval_runs": cfg.eval.runs,
        "sft": sft,
        "training": arms,
    }


async def run_transfer(
    cfg: TransferSections, *, fresh: bool = False, echo: Callable[[str], None] = print
) -> dict[str, Any]:
    """All stages (module docstring); writes and returns the summary."""
    check(cfg)
    out = Path(cfg.transfer.out_dir)
    st = Stages(out, fresh, echo)
    sets = await _task_sets(cfg, st, echo)
    sft = await st.run("sft", sft_inputs(cfg), lambda f: _sft(cfg, sets.train, f, echo))
    arms = await _policies(cfg, st, sets, sft)
    summary = _summary(cfg, sets, sft, arms) | {"seconds": st.ran}
    summary |= matrices(out, summary, cfg)
    summary["time_split"] = time_split(out, summary, cfg.transfer.base_model_row)
    write_tables(out, summary)
    return summary
