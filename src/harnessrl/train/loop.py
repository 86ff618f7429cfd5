"""The RL training loop behind `harnessrl train`: one step, top to bottom, in named stages.

    records = asyncio.run(train(cfg, tasks))        # cfg: TrainSections (a Config is one); one dict per step

One step (`TrainLoop.run_step`), as in DESIGN's "One training step, as data":

    schedule    jobs = which tasks x which harnesses, `group_size` rollouts per (task, harness) group
                (`train.schedule`: a pure function of (seed, step), so a resumed run redoes the same step);
                with `train.dynamic_sampling_rounds`, groups without reward variance are replaced by
                other tasks' groups until the step holds as many informative ones (`train.dynamic`)
    rollouts    the runner runs every job through its harness in a sandbox against the proxy; the proxy
                samples from the engine, which holds the current policy weights (or, with
                `train.max_off_policy_steps = k > 0`, the weights of up to k steps ago: see Async)
    staleness   each rollout's policy lag (`train.staleness`); ok rollouts over the bound are dropped
                as `filtered:stale` or kept (`train.stale_rollouts`)
    trees       each `ok` rollout -> prefix tree -> TreeSample; so is each failure the policy caused
                whose status `train.failures.train_statuses` lists (every failure status by default:
                reward 0 on the calls it made, as ClawGym keeps GRPO groups full, and so that no
                failure pays better than an honest 0). Other rollouts (infrastructure faults
                always), trees the trace filters dropped whole,
                trees without a single trained token, and (GRPO) groups under
                `train.failures.min_group_size` are counted by label and never trained (DESIGN
                invariant 3: nothing is lost silently)
    advantages  `train.algorithm` from `harnessrl.rl.algo`: GRPO inside each (task, harness) group over
                the kept rollouts; PPO with the trainer's value head: per-branch GAE on each tree
    optimize    `Trainer.step`: one optimizer step over the tree-packed batch
    sync        `engine.update_weights(trainer.weights())`
    log         one JSON line per step in `<out_dir>/metrics.jsonl` and its scalars as TensorBoard events
                in `<out_dir>/tb` (`train/metrics.py`), one summary line on the console; `progress`
                (`harnessrl.progress`) shows the rollouts of the step while they run
    checkpoint  every `save_every` steps and after the last: trainer state + loop position
                (the newest `keep_checkpoints` are kept)

Weights. The embedded default keeps two copies of the policy in one process: the trainer's (float32,
with optimizer state) and the engine's (`engine.dtype`). After each optimizer step the engine copies
the trainer's tensors in place (`HFEngine.update_weights`: queued behind the running batch, bumps
`weights_version`). A vLLM engine would instead be handed a checkpoint folder to reload; that engine
does not exist yet, so the loop only knows the in-process hand-off.

Resume. `train.resume = true` loads the latest checkpoint under `<out_dir>/checkpoints` (model,
optimizer, scheduler, RNG streams, optimizer step; the loop step is stored as the trainer's
`data_position`), pushes its weights to the engine, drops metrics lines of steps after it, and runs
the next step with the schedule that step had. Rollouts themselves are not replayed bit-identically:
harnesses, sandboxes and concurrent sampling are not deterministic.

Async. `run` takes each step's rollouts from a `rollout.producer.StepProducer`, which starts step s
once step s - k - 1 is trained (k = `train.max_off_policy_steps`): with k = 0 that is the synchronous
loop above; with k >= 1 the rollouts of the next steps run while the trainer updates. The stages
after `rollouts` (`train_on`) run in worker threads (trees, optimizer step, checkpoint and metrics
writes), so the proxy's event loop keeps serving those rollouts. Every call records the engine's
`weights_version`; each step logs the staleness of every rollout (`staleness` in its metrics line) and
`time.rollouts` (waiting for them) next to `time.rollouts_ran` (how long they ran). The truncated IS
weight uses the sampling log-probs of each call, so stale tokens are corrected exactly.

A step with nothing to learn from skips the optimizer (and the weight hand-off) and says why in its
log line: no trainable rollout, or GRPO with every group at zero variance and no KL term (a
zero-advantage step would only spend a forward and backward pass). Left out: several PPO epochs per
batch, keeping rollouts of a step for reuse, and carrying a step's stragglers into the next one (a
step waits for all of its rollouts).
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from statistics import fmean, pstdev
from typing import Any

from harnessrl.config_section import ConfigError
from harnessrl.formats.metrics import truncate_metrics
from harnessrl.progress import Progress
from harnessrl.protocols import Engine
from harnessrl.rl.algo import ALGORITHMS
from harnessrl.rollout.runner import RolloutJob
from harnessrl.rollout.session import RolloutStack, Runner
from harnessrl.scaling.config import HarnessSpaceConfig
from harnessrl.tasks.harbor import refuse_internet
from harnessrl.trace import aggregate_stats, trace_rollout, with_filter_status
from harnessrl.train.config import TrainerConfig, TrainSections
from harnessrl.train.dynamic import Fill, fill, informative_groups
from harnessrl.train.metrics import MetricsSink, outcomes
from harnessrl.train.schedule import ScheduleSpec, SpaceSpec, schedule_step
from harnessrl.train.staleness import apply_bound
from harnessrl.train.trainer import Trainer
from harnessrl.types import Rollout, RolloutStatus, Task, TreeSample
from harnessrl.verify.checker import refuse_shell_entries

TREE_KEYS = (
    "calls",
    "retokenized",
    "live_leaves",
    "dead_leaves",
    "tokens_per_call",
    "tokens_paths",
    "tokens_unique",
    "model_tokens_kept",
    "segments_by_kind",
)
"""Tree statistics (summed over the trained trees of a step) that go into each metrics line."""


def trainer_config(cfg: TrainSections) -> TrainerConfig:
    """The TrainerConfig the loop runs: `train.trainer` with lr / seed / temperature from the run."""
    t = cfg.train.trainer
    for name, where in (("lr", "train.lr"), ("seed", "train.seed"), ("temperature", "engine.sampling")):
        if name in t.model_fields_set:
            raise ConfigError(f"set {where}, not train.trainer.{name}: the loop fills it in from there")
    temp = cfg.engine.sampling.temperature
    update: dict[str, Any] = {
        "lr": cfg.train.lr,
        "seed": cfg.train.seed,
        "temperature": temp if temp > 0 else 1.0,
    }
    if "total_steps" not in t.model_fields_set:
        update["total_steps"] = cfg.train.steps
    from harnessrl.rl.algo import ALGORITHMS

    if ALGORITHMS[cfg.train.algorithm].needs_values and t.value == "none":
        update["value"] = "head"
    return t.model_copy(update=update)


def build_trainer(cfg: TrainSections) -> Trainer:
    """A Trainer on its own float32 copy of `engine.model` (plus critic / reference copies if configured)."""
    from harnessrl.engines.models import load_model

    tc = trainer_config(cfg)

    def copy() -> Any:
        return load_model(cfg.engine.model, "float32", cfg.engine.device)

    critic = copy() if tc.value == "critic" else None
    ref = copy() if tc.loss.kl_coef > 0 else None
    return Trainer(copy(), tc, ref_model=ref, critic=critic)


def schedule_spec(cfg: TrainSections) -> ScheduleSpec:
    t = cfg.train
    space = None
    if t.harness_space is not None:
        if t.harnesses:
            raise ConfigError("set train.harnesses or train.harness_space, not both")
        space = space_spec(t.harness_space, t.seed)
    return ScheduleSpec(
        harnesses=tuple(t.harnesses or ([] if space else [cfg.rollout.harness])),
        tasks_per_step=t.tasks_per_step,
        group_size=t.group_size,
        harnesses_per_task=t.harnesses_per_task,
        seed=t.seed,
        options=t.harness_options,
        space=space,
    )


def space_spec(hs: HarnessSpaceConfig, train_seed: int) -> SpaceSpec:
    """The schedule's harness-space part; ConfigError when the design cannot be paired as asked."""
    from harnessrl.scaling import design_codes, pair_codes

    seed = train_seed if hs.seed is None else hs.seed
    try:
        codes = tuple(design_codes(hs.design, seed, hs.single))
        pair_codes(codes, hs.k, hs.pairing, seed, "check")
    except ValueError as e:
        raise ConfigError(f"train.harness_space: {e}") from None
    return SpaceSpec(codes=codes, k=hs.k, pairing=hs.pairing, seed=seed, options=hs.options)


class TreeBatch:
    """The trainable part of one step's rollouts, with the label of every rollout."""

    def __init__(self) -> None:
        self.samples: list[TreeSample] = []
        self.harness: list[str] = []
        """Harness of each kept sample."""
        self.sample_labels: list[str] = []
        """Status label of each kept sample's rollout (`ok`, or a failure trained with reward 0)."""
        self.labels: Counter[str] = Counter()
        """Status label of every rollout: ok (trained) or why not; a failure trained with reward 0
        keeps its own label and is also counted in `failures_trained`."""
        self.failures_trained: Counter[str] = Counter()
        self.small_groups = 0
        """Groups dropped whole for being under `train.failures.min_group_size`."""
        self.zero_variance_dropped = 0
        """Samples of groups without reward variance that dynamic sampling left untrained."""
        self.tree_stats: list[dict[str, Any]] = []


def trainable_as_failure(r: Rollout, cfg: TrainSections) -> bool:
    """A failure the policy caused, of a status `train.failures.train_statuses` trains (reward 0)."""
    return r.fault == "policy" and r.status.value in cfg.train.failures.train_statuses


def collect_trees(rollouts: Sequence[Rollout], cfg: TrainSections) -> TreeBatch:
    """Stage `trees`: ok rollouts, and failures the policy caused that the failure policy trains
    (with reward 0, on the calls they made) -> TreeSamples; everything else counted by its label,
    not trained."""
    batch = TreeBatch()
    for r in rollouts:
        failure = r.status is not RolloutStatus.OK
        if failure and not trainable_as_failure(r, cfg):
            batch.labels[r.status_label] += 1
            continue
        if failure:
            r = r.model_copy(update={"reward": 0.0})
        tree = trace_rollout(r, cfg.trace.for_segments(cfg.train.segments))
        labelled = with_filter_status(r, tree)
        if labelled.status is not RolloutStatus.OK and not failure:
            batch.labels[labelled.status_label] += 1
            continue
        nothing = tree.filter_reason is not None or int(tree.stats.get("model_tokens_kept", 0)) == 0
        if nothing and failure:  # a failure keeps the status that explains it
            batch.labels[r.status_label] += 1
            continue
        if nothing:
            batch.labels["filtered:no_model_tokens"] += 1
            continue
        batch.labels[r.status_label] += 1
        if failure:
            batch.failures_trained[r.status_label] += 1
        batch.samples.append(tree.to_sample())
        batch.harness.append(r.harness)
        batch.sample_labels.append(r.status_label)
        batch.tree_stats.append(tree.stats)
    return batch


def drop_small_groups(batch: TreeBatch, min_size: int) -> None:
    """GRPO: drop every group with fewer than `min_size` samples, relabelled `filtered:small_group`."""
    sizes = Counter(s.group_id for s in batch.samples)
    small = {g for g, n in sizes.items() if n < min_size}
    if small:
        drop_groups(batch, small, "filtered:small_group")
        batch.small_groups = len(small)


def drop_groups(batch: TreeBatch, groups: set[str], label: str) -> int:
    """Take every sample of `groups` out of the batch, relabelled `label`; returns how many."""
    keep = [i for i, s in enumerate(batch.samples) if s.group_id not in groups]
    for i, s in enumerate(batch.samples):
        if s.group_id in groups:
            old = batch.sample_labels[i]
            batch.labels[old] -= 1
            batch.labels[label] += 1
            if old != "ok":
                batch.failures_trained[old] -= 1
    batch.labels = +batch.labels
    batch.failures_trained = +batch.failures_trained
    dropped = len(batch.samples) - len(keep)
    batch.samples = [batch.samples[i] for i in keep]
    batch.harness = [batch.harness[i] for i in keep]
    batch.sample_labels = [batch.sample_labels[i] for i in keep]
    batch.tree_stats = [batch.tree_stats[i] for i in keep]
    return dropped


def group_summary(samples: Sequence[TreeSample]) -> dict[str, int]:
    """Trained groups and how many of them have zero reward variance (no GRPO signal)."""
    rewards: dict[str, list[float]] = defaultdict(list)
    for s in samples:
        rewards[s.group_id].append(s.reward)
    zero = sum(1 for rs in rewards.values() if max(rs) == min(rs))
    return {"trained": len(rewards), "zero_variance": zero}


def reward_summary(rollouts: Sequence[Rollout]) -> dict[str, Any]:
    """Mean / std / min / max of the rewards of the ok rollouts, overall and per harness."""
    scored = [r for r in rollouts if r.status is RolloutStatus.OK and r.reward is not None]
    values = [float(r.reward) for r in scored if r.reward is not None]
    by_harness: dict[str, list[float]] = defaultdict(list)
    for r in scored:
        by_harness[r.harness].append(float(r.reward or 0.0))
    return {
        "n": len(values),
        "mean": fmean(values) if values else None,
        "std": pstdev(values) if values else None,
        "min": min(values, default=None),
        "max": max(values, default=None),
        "by_harness": {h: fmean(v) for h, v in sorted(by_harness.items())},
    }


class TrainLoop:
    """Runs training steps against a RolloutRunner (see the module docstring)."""

    def __init__(
        self,
        cfg: TrainSections,
        tasks: Sequence[Task],
        trainer: Trainer,
        engine: Engine,
        *,
        echo: Callable[[str], None] = print,
        progress: Progress | None = None,
    ) -> None:
        if not tasks:
            raise ValueError("no tasks to train on")
        refuse_shell_entries(tasks, cfg.verify.allow_shell_entries)
        refuse_internet(tasks, cfg.train.allow_internet_tasks)
        self.cfg = cfg
        self.tasks = list(tasks)
        self.trainer = trainer
        self.engine = engine
        self.echo = echo
        self.spec = schedule_spec(cfg)
        self.out_dir = Path(cfg.train.out_dir)
        self.metrics_path = self.out_dir / "metrics.jsonl"
        self.checkpoints = self.out_dir / "checkpoints"
        self.sink = MetricsSink(self.out_dir, cfg.tracking, cfg.model_dump(mode="json"))
        if cfg.train.dynamic_sampling_rounds and not ALGORITHMS[cfg.train.algorithm].grouped:
            raise ConfigError("train.dynamic_sampling_rounds needs a grouped algorithm (grpo)")
        self.fills: dict[int, Fill] = {}
        """Dynamic sampling of each step whose rollouts are done and not yet trained."""
        self.progress = progress or Progress(live=False, echo=echo, interval_s=float("inf"), summary=False)

    def rollout_config(self) -> TrainSections:
        """The run config with rollout artifacts under `<out_dir>/rollouts` (one folder per rollout)."""
        return self.cfg.model_copy(
            update={
                "rollout": self.cfg.rollout.model_copy(update={"out_dir": str(self.out_dir / "rollouts")})
            }
        )

    async def run(self) -> list[dict[str, Any]]:
        """Resume if asked, then run steps up to `train.steps`; returns this run's metrics records.

        The rollouts come from a `StepProducer` running at most `train.max_off_policy_steps` steps
        ahead of the trainer (0: each step's rollouts start after the previous step's update)."""
        self.out_dir.mkdir(parents=True, exist_ok=True)
        start = await self.resume() if self.cfg.train.resume else 0
        if not self.cfg.train.resume:
            self.metrics_path.write_text("")
        self.sink.open()  # a tracker asked for but not installed fails here, before any rollout
        try:
            return await self.steps(start)
        finally:
            self.sink.close()

    async def steps(self, start: int) -> list[dict[str, Any]]:
        """Steps `start` .. `train.steps - 1` (see `run`)."""
        from harnessrl.rollout.producer import StepProducer

        records: list[dict[str, Any]] = []
        async with RolloutStack.from_config(self.rollout_config(), self.tasks, engine=self.engine) as stack:
            runner = stack.runner
            assert runner is not None

            async def rollouts_of(step: int) -> list[Rollout]:
                return await self.sample(runner, step)

            lag = self.cfg.train.max_off_policy_steps
            async with StepProducer(rollouts_of, start=start, stop=self.cfg.train.steps, lag=lag) as made:
                for step in range(start, self.cfg.train.steps):
                    clock = _Clock()
                    done = await made.rollouts(step)
                    clock.lap("rollouts")
                    records.append(await self.train_on(step, done.rollouts, clock, done.seconds))
                    await made.trained(step)
        return records

    async def sample(self, runner: Runner, step: int) -> list[Rollout]:
        """Stage `schedule` + `rollouts`: the scheduled groups, then (with dynamic sampling) the
        replacement rounds; what dynamic sampling did waits in `self.fills[step]` for `train_on`."""
        t = self.cfg.train

        async def run(jobs: list[RolloutJob], round_: int) -> list[Rollout]:
            title = "train" if round_ == 0 else f"train resample {round_}"
            self.progress.start(title, len(jobs), self.cfg.rollout.concurrency, step=step, steps=t.steps)
            return await runner.run_many(jobs, on_done=self.progress.on_rollout_done)

        rollouts = await run(schedule_step(self.tasks, self.spec, step), 0)
        if t.dynamic_sampling_rounds:
            rollouts, self.fills[step] = await fill(
                rollouts, run, self.tasks, self.spec, step, rounds=t.dynamic_sampling_rounds,
                trains=self.trains, min_size=min(t.failures.min_group_size, t.group_size),
            )  # fmt: skip
        return rollouts

    def trains(self, r: Rollout) -> bool:
        return trainable_as_failure(r, self.cfg)

    async def run_step(self, runner: Runner, step: int) -> dict[str, Any]:
        """One full synchronous step (module docstring); returns the metrics record it logged."""
        clock = _Clock()
        rollouts = await self.sample(runner, step)
        clock.lap("rollouts")
        return await self.train_on(step, rollouts, clock, clock.laps["rollouts"])

    async def train_on(
        self, step: int, rollouts: Sequence[Rollout], clock: _Clock, rollouts_ran: float
    ) -> dict[str, Any]:
        """Stages `staleness` .. `checkpoint` of one step on its finished rollouts. Everything heavy
        (trees, the optimizer step, checkpoint and metrics writes) runs in a worker thread, so the
        proxy's event loop keeps serving the rollouts of later steps meanwhile."""
        t = self.cfg.train
        version = getattr(self.engine, "weights_version", None)
        rollouts, stale = apply_bound(
            rollouts, version, t.max_off_policy_steps, t.stale_rollouts, t.failures.train_statuses
        )
        batch = await asyncio.to_thread(collect_trees, rollouts, self.cfg)
        filled = self.fills.pop(step, None)
        if filled is not None:
            batch.zero_variance_dropped = drop_groups(batch, filled.uninformative, "filtered:zero_variance")
        if ALGORITHMS[t.algorithm].grouped:
            drop_small_groups(batch, min(t.failures.min_group_size, t.group_size))
        clock.lap("trees")
        trainer_metrics, skip = await asyncio.to_thread(self.optimize, batch, clock)
        if skip is None:
            await self.engine.update_weights(await asyncio.to_thread(self.trainer.weights))
            clock.lap("weights")
        record = self.record(step, rollouts, batch, trainer_metrics, skip)
        record["groups"] |= self.sampling_counts(rollouts, filled, batch)
        record["staleness"] = stale.summary(s.rollout_id for s in batch.samples)
        await asyncio.to_thread(self.checkpoint, step)
        clock.lap("checkpoint")
        record["time"] = dict(clock.laps, rollouts_ran=round(rollouts_ran, 3))
        await asyncio.to_thread(self.write_metrics, record)
        self.progress.finish()
        self.echo(console_line(record, t.steps))
        return record

    def optimize(self, batch: TreeBatch, clock: _Clock) -> tuple[dict[str, float], str | None]:
        """Stages `advantages` + `optimize`; returns (trainer metrics, why the step was skipped or None)."""
        from harnessrl.rl.algo import build_algorithm
        from harnessrl.rl.packing import layout_tree

        if not batch.samples:
            return {}, "no_trainable_rollouts"
        algo = build_algorithm(self.cfg.train.algorithm, self.cfg.train.advantage, self.cfg.train.segments)
        layouts = [layout_tree(s) for s in batch.samples]
        values = self.trainer.values(layouts) if algo.needs_values else None
        targets = algo.targets(batch.samples, layouts, values)
        if not algo.needs_values and targets.all_zero and self.trainer.cfg.loss.kl_coef == 0.0:
            clock.lap("advantages")
            return {}, "zero_advantage"
        clock.lap("advantages")
        metrics = self.trainer.step(targets.layouts, targets.advantages, returns=targets.returns)
        clock.lap("train")
        return metrics, None

    def record(
        self,
        step: int,
        rollouts: Sequence[Rollout],
        batch: TreeBatch,
        trainer_metrics: dict[str, float],
        skip: str | None,
    ) -> dict[str, Any]:
        """The metrics line of one step (stage `log`)."""
        tree = aggregate_stats(batch.tree_stats)
        groups = group_summary(batch.samples)
        groups["scheduled"] = len({r.group_id for r in rollouts})
        groups["dropped_small"] = batch.small_groups
        return {
            "step": step,
            "optimizer_step": self.trainer.state.step,
            "trained": skip is None,
            "skip_reason": skip,
            "rollouts": len(rollouts),
            "status": dict(sorted(batch.labels.items())),
            "trained_rollouts": len(batch.samples),
            "failures_trained": dict(sorted(batch.failures_trained.items())),
            "trained_by_harness": dict(sorted(Counter(batch.harness).items())),
            "reward": reward_summary(rollouts),
            "groups": groups,
            "tree": {k: tree.get(k, 0) for k in TREE_KEYS},
            "trainer": trainer_metrics,
            "weights_version": getattr(self.engine, "weights_version", None),
            "outcomes": outcomes(rollouts),
        }

    def sampling_counts(
        self, rollouts: Sequence[Rollout], filled: Fill | None, batch: TreeBatch
    ) -> dict[str, int]:
        """Informative groups of the step (with reward variance before the trees), and what dynamic
        sampling did: groups resampled, rounds, tries exhausted, rollouts dropped without variance."""
        t = self.cfg.train
        if filled is None:
            status = informative_groups(rollouts, self.trains, min(t.failures.min_group_size, t.group_size))
            filled = Fill(target=len(status), informative=sum(status.values()))
        return filled.counts() | {"dropped_zero_variance": batch.zero_variance_dropped}

    def write_metrics(self, record: dict[str, Any]) -> None:
        self.sink.write(record)  # metrics.jsonl + TensorBoard events (train/metrics.py)

    def checkpoint(self, step: int) -> None:
        """Stage `checkpoint`: every `save_every` steps and after the last step."""
        every = self.cfg.train.save_every
        last = step + 1 == self.cfg.train.steps
        if last or (every > 0 and (step + 1) % every == 0):
            from harnessrl.train.checkpoint import prune_checkpoints

            self.trainer.state.data_position = step + 1
            self.trainer.save(self.checkpoints)
            prune_checkpoints(self.checkpoints, self.cfg.train.keep_checkpoints)

    async def resume(self) -> int:
        """Load the latest checkpoint, hand its weights to the engine; returns the next step (0 if none)."""
        from harnessrl.train.checkpoint import latest_checkpoint

        path = latest_checkpoint(self.checkpoints)
        if path is None:
            self.echo(f"resume: no checkpoint under {self.checkpoints}; starting at step 0")
            self.metrics_path.write_text("")
            return 0
        self.trainer.load(path)
        start = self.trainer.state.data_position
        await self.engine.update_weights(self.trainer.weights())
        truncate_metrics(self.metrics_path, start)
        self.echo(f"resume: {path} (optimizer step {self.trainer.state.step}); next step {start}")
        return start


class _Clock:
    """Seconds per named stage of one step, plus the total."""

    def __init__(self) -> None:
        self.t0 = self.last = time.perf_counter()
        self.laps: dict[str, float] = {}

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.laps[name] = round(self.laps.get(name, 0.0) + now - self.last, 3)
        self.laps["step"] = round(now - self.t0, 3)
        self.last = now


def console_line(rec: dict[str, Any], steps: int) -> str:
    """`step 1/2 | ok 3/4 harness_error 1 | reward 0.25+-0.43 | ...` (one line per step)."""
    status = " ".join(f"{k} {v}" for k, v in rec["status"].items())
    rw = rec["reward"]
    reward = "reward -" if rw["mean"] is None else f"reward {rw['mean']:.3f}+-{rw['std']:.3f}"
    t = rec["trainer"]
    if rec["trained"]:
        train = (
            f"loss {t.get('loss/total', 0.0):+.4f} grad {t.get('grad_norm', 0.0):.3f} "
            f"mismatch {t.get('mismatch/abs_max', 0.0):.2e} tok {t.get('trained_tokens', 0)}"
        )
    else:
        train = f"skipped ({rec['skip_reason']})"
    times = rec["time"]
    parts = " ".join(f"{k} {times[k]:.1f}" for k in ("rollouts", "trees", "train", "weights") if k in times)
    g = rec["groups"]
    resampled = f", resampled {g['resampled']}" if g.get("resampled") else ""
    return (
        f"step {rec['step'] + 1}/{steps} | {status} | {reward} | groups {g['trained']} "
        f"(zero-var {g['zero_variance']}, informative {g.get('informative', '-')}{resampled}) | {train} | "
        f"{times['step']:.1f}s ({parts})"
    )


async def train(
    cfg: TrainSections,
    tasks: Sequence[Task],
    *,
    engine: Engine | None = None,
    trainer: Trainer | None = None,
    echo: Callable[[str], None] = print,
    progress: Progress | None = None,
) -> list[dict[str, Any]]:
    """Build the trainer and engine (unless given) and run the loop; returns the metrics records."""
    from harnessrl.engines import build_engine

    trainer = trainer if trainer is not None else build_trainer(cfg)
    engine = engine if engine is not None else build_engine(cfg.engine)
    return await TrainLoop(cfg, tasks, trainer, engine, echo=echo, progress=progress).run()
