"""The stages every experiment shares (quickstart, the harness-scaling ablation, harness transfer).

    st = Stages(out, fresh, echo)                      # run-or-reuse, one folder per stage
    paths = await st.run("tasks", inputs, lambda folder: ...)
    splits = generate_splits(train_families(names), train, heldout, seed, folder)
    sft = await cold_start(cfg, tasks, {"00000": "whitebox:00000"}, folder, echo)
    entry = await evaluate_policy(cfg, held, harnesses, "sft", sft["model"], None, folder)
    checkpoint = await train_policy(cfg, tasks, folder)

A stage's result lives in `<out>/<name>/stage.json` (`formats.stage`) with a digest of its inputs: a
later run whose inputs did not change reuses it, so an interrupted experiment resumes where it stopped.
The experiments compose these with `train/`, `evaluate/` and `tasks/`; what is their own (the order of
their stages, their tables) stays in their module.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from harnessrl.experiments.config import RunSections
from harnessrl.formats import FormatError
from harnessrl.formats.stage import STAGE_FILE, StageRecord, read_stage, write_stage
from harnessrl.types import Task


def inputs_digest(inputs: Any) -> str:
    """sha256 (hex) of a stage's inputs, as sorted JSON (anything JSON cannot hold as its text)."""
    return hashlib.sha256(json.dumps(inputs, sort_keys=True, default=str).encode()).hexdigest()


class Stages:
    """Run-or-reuse: a stage's result is kept in `<out>/<name>/stage.json` with a digest of its inputs."""

    def __init__(self, out: Path, fresh: bool, echo: Callable[[str], None]) -> None:
        self.out, self.fresh, self.echo = out, fresh, echo
        self.seconds: dict[str, float] = {}
        """Seconds each stage took in this run (0 when reused)."""
        self.ran: dict[str, float] = {}
        """Seconds each stage took when it ran, in this run or the earlier one it was reused from."""

    def reusable(self, name: str, digest: str) -> StageRecord | None:
        """The stage's earlier record when it ran to the end with these inputs (and not `fresh`)."""
        stamp = self.out / name / STAGE_FILE
        if self.fresh or not stamp.is_file():
            return None
        try:
            saved = read_stage(stamp)
        except FormatError as e:
            self.echo(f"[{name}] {e}: running it again")
            return None
        return saved if saved.inputs == digest else None

    async def run(self, name: str, inputs: Any, fn: Callable[[Path], Awaitable[Any]]) -> Any:
        """`fn(folder)`'s result, from the stage's earlier run when its inputs are unchanged."""
        folder = self.out / name
        digest = inputs_digest(inputs)
        saved = self.reusable(name, digest)
        if saved is not None:
            self.echo(f"[{name}] reused from {folder} (ran {saved.seconds:.0f} s)")
            self.seconds[name], self.ran[name] = 0.0, saved.seconds
            return saved.result
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        self.echo(f"[{name}] running -> {folder}")
        t0 = time.perf_counter()
        result = await fn(folder)
        self.seconds[name] = self.ran[name] = time.perf_counter() - t0
        write_stage(folder, StageRecord(digest, self.seconds[name], result))
        self.echo(f"[{name}] done in {self.seconds[name]:.0f} s")
        return result


def stage_inputs(cfg: RunSections, *sections: str) -> dict[str, Any]:
    """The named config sections as a stage input."""
    return {s: getattr(cfg, s).model_dump() for s in sections}


def train_families(names: Sequence[str]) -> list[str]:
    """The generated task families an experiment names (none: every train family)."""
    from harnessrl.tasks.generate import TRAIN_FAMILIES

    return list(names or TRAIN_FAMILIES)


def generate_splits(families: list[str], train: int, heldout: int, seed: int, folder: Path) -> dict[str, str]:
    """`train` train and `heldout` held-out instances of each family under `folder`; their paths."""
    from harnessrl.tasks.generate import generate

    generate(families, train, seed, folder, split="train")
    generate(families, heldout, seed, folder, split="heldout")
    return {"train": str(folder / "train"), "heldout": str(folder / "heldout_instances")}


def load_split(path: str) -> list[Task]:
    """The tasks a `tasks` stage generated into `path`."""
    from harnessrl.tasks import load_tasks

    return load_tasks(path).tasks


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
    sets = {"demonstrations": False, "rollouts": demo_dirs, "out_dir": str(folder)}
    result = await sft(cfg.model_copy(update={"sft": cfg.sft.model_copy(update=sets)}), tasks, echo=echo)
    return {"model": result["model"], "log": result["log"], "dropped": result["dropped"], "solved": solved}


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


async def train_policy(cfg: RunSections, tasks: list[Task], folder: Path) -> tuple[list[dict[str, Any]], str]:
    """RL (`train.loop.train`) as `cfg` says, its checkpoints under `<folder>/checkpoints`; returns the
    run's metrics records and its last checkpoint (the loop always saves after its last step)."""
    from harnessrl.formats.checkpoints import latest_checkpoint
    from harnessrl.train.loop import train

    records = await train(cfg, tasks, echo=lambda s: print(s, flush=True))
    ckpt = latest_checkpoint(folder / "checkpoints")
    assert ckpt is not None  # the loop always saves after its last step
    return records, str(ckpt)
