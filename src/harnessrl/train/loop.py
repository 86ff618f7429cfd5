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
                in `<out_dir>/tb` (`train/metrics.py`, `train/step_record.py`), one summary line on the
                console; `progress`
                (`harnessrl.progress`) shows the rollouts of the step while they run
    checkpoint  every `save_every` steps and after the last: trainer state + loop position
                (the newest `keep_checkpoints` are kept)

Weights. The embedded default keeps two copies of the policy in one process: the trainer's (float32,
with optimizer state) and the engine's (`engine.dtype`). After each optimizer step the engine copies
the trainer's tensors in place (`HFEngine.update_weights`: queued behind the running batch, bumps
`weights_version`). The vLLM engine (`engines/vllm.py`) takes the same call: it writes the weights as
one safetensors file, lets the calls in flight finish, has its server reload them in place and drops
its prefix cache (`engine.vllm.weight_sync`). The loop only calls `engine.update_weights`.

Where the stages live: `train.build` (the trainer and the schedule spec from the config),
`train.schedule` and `train.dynamic` (schedule), `rollout.producer` (rollouts), `train.staleness`,
`train.batch` (trees), `harnessrl.rl.algo` (advantages), `train.trainer` and `train.ranks` (optimize),
`train.step_record` (log: the metrics line, the console line, the step clock), `train.checkpoint`.

Ranks. Under torchrun (or `train.trainer.world_size`) this loop runs on rank 0 only; the trainer
stages go through `train.ranks.Ranks`, which splits each step's trees over the ranks by tokens and has
every rank's trainer step, gather the weights for the engine, save and load together (FSDP2 shards,
sharded checkpoints); the other ranks start no sandbox, proxy or engine (`train/ranks.py`).

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
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from harnessrl.config_section import ConfigError
from harnessrl.formats.metrics import truncate_metrics
from harnessrl.progress import Progress
from harnessrl.protocols import Engine
from harnessrl.rl.algo import ALGORITHMS
from harnessrl.rollout.runner import RolloutJob
from harnessrl.rollout.session import RolloutStack, Runner
from harnessrl.tasks.harbor import refuse_internet
from harnessrl.train.batch import TreeBatch, trainable_as_failure, trainable_batch
from harnessrl.train.build import build_trainer, schedule_spec
from harnessrl.train.config import TrainSections
from harnessrl.train.dynamic import Fill, fill, informative_groups
from harnessrl.train.metrics import MetricsSink
from harnessrl.train.ranks import Ranks, follow, join_ranks
from harnessrl.train.schedule import schedule_step
from harnessrl.train.staleness import StalenessReport, apply_bound
from harnessrl.train.step_record import StepClock, console_line, step_record
from harnessrl.train.trainer import Trainer
from harnessrl.types import Rollout, Task
from harnessrl.verify.checker import refuse_shell_entries


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
        ranks: Ranks | None = None,
    ) -> None:
        if not tasks:
            raise ValueError("no tasks to train on")
        refuse_shell_entries(tasks, cfg.verify.allow_shell_entries)
        refuse_internet(tasks, cfg.train.allow_internet_tasks)
        self.cfg = cfg
        self.tasks = list(tasks)
        self.trainer = trainer
        self.ranks = ranks or Ranks(trainer)
        """What the trainer stages call: every rank's trainer together (`train.ranks`), or this one's."""
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
                    clock = StepClock()
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
        clock = StepClock()
        rollouts = await self.sample(runner, step)
        clock.lap("rollouts")
        return await self.train_on(step, rollouts, clock, clock.laps["rollouts"])

    async def train_on(
        self, step: int, rollouts: Sequence[Rollout], clock: StepClock, rollouts_ran: float
    ) -> dict[str, Any]:
        """Stages `staleness` .. `checkpoint` of one step on its finished rollouts. Everything heavy
        (trees, the optimizer step, checkpoint and metrics writes) runs in a worker thread, so the
        proxy's event loop keeps serving the rollouts of later steps meanwhile."""
        rollouts, stale = self.bound_staleness(rollouts)
        filled = self.fills.pop(step, None)
        batch = await asyncio.to_thread(self.build_batch, rollouts, filled)
        clock.lap("trees")
        trainer_metrics, skip = await asyncio.to_thread(self.optimize, batch, clock)
        if skip is None:
            await self.sync_weights()
            clock.lap("weights")
        record = self.record(step, rollouts, batch, trainer_metrics, skip)
        record["groups"] |= self.sampling_counts(rollouts, filled, batch)
        record["staleness"] = stale.summary(s.rollout_id for s in batch.samples)
        await asyncio.to_thread(self.checkpoint, step)
        clock.lap("checkpoint")
        record["time"] = dict(clock.laps, rollouts_ran=round(rollouts_ran, 3))
        await asyncio.to_thread(self.write_metrics, record)
        self.progress.finish()
        self.echo(console_line(record, self.cfg.train.steps))
        return record

    def bound_staleness(self, rollouts: Sequence[Rollout]) -> tuple[list[Rollout], StalenessReport]:
        """Stage `staleness`: each rollout's policy lag against the engine's weights (`train.staleness`)."""
        t = self.cfg.train
        version = getattr(self.engine, "weights_version", None)
        return apply_bound(
            rollouts, version, t.max_off_policy_steps, t.stale_rollouts, t.failures.train_statuses
        )

    def build_batch(self, rollouts: Sequence[Rollout], filled: Fill | None) -> TreeBatch:
        """Stage `trees`: the trainable trees (`train.batch`), without the groups dynamic sampling left
        uninformative and, for a grouped algorithm, the groups under `train.failures.min_group_size`."""
        return trainable_batch(rollouts, self.cfg, None if filled is None else filled.uninformative)

    def optimize(self, batch: TreeBatch, clock: StepClock) -> tuple[dict[str, float], str | None]:
        """Stages `advantages` + `optimize`; returns (trainer metrics, why the step was skipped or None)."""
        from harnessrl.rl.algo import build_algorithm, credit_differs
        from harnessrl.rl.credit import weight_shares
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
        shares = weight_shares(batch.samples, layouts, targets.advantages)
        if self.cfg.train.segments == "credited":
            t = self.cfg.train
            differs = credit_differs(
                t.algorithm, t.advantage, batch.samples, layouts, values, targets.advantages
            )
            shares["weight/credit_differs"] = differs
        metrics = self.ranks.step(targets.layouts, targets.advantages, targets.returns)
        clock.lap("train")
        return metrics | shares, None

    async def sync_weights(self) -> None:
        """Stage `sync`: the trainer's weights to the engine (module docstring, Weights)."""
        await self.engine.update_weights(await asyncio.to_thread(self.ranks.weights))

    def record(
        self,
        step: int,
        rollouts: Sequence[Rollout],
        batch: TreeBatch,
        trainer_metrics: dict[str, float],
        skip: str | None,
    ) -> dict[str, Any]:
        """The metrics line of one step (stage `log`, `train.step_record`)."""
        version = getattr(self.engine, "weights_version", None)
        return step_record(step, rollouts, batch, trainer_metrics, skip, self.trainer.state.step, version)

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

            self.ranks.save(self.checkpoints, step + 1)
            prune_checkpoints(self.checkpoints, self.cfg.train.keep_checkpoints)

    async def resume(self) -> int:
        """Load the latest checkpoint, hand its weights to the engine; returns the next step (0 if none)."""
        from harnessrl.train.checkpoint import latest_checkpoint

        path = latest_checkpoint(self.checkpoints)
        if path is None:
            self.echo(f"resume: no checkpoint under {self.checkpoints}; starting at step 0")
            self.metrics_path.write_text("")
            return 0
        self.ranks.load(path)
        start = self.trainer.state.data_position
        await self.engine.update_weights(self.ranks.weights())
        truncate_metrics(self.metrics_path, start)
        self.echo(f"resume: {path} (optimizer step {self.trainer.state.step}); next step {start}")
        return start


async def train(
    cfg: TrainSections,
    tasks: Sequence[Task],
    *,
    engine: Engine | None = None,
    trainer: Trainer | None = None,
    echo: Callable[[str], None] = print,
    progress: Progress | None = None,
) -> list[dict[str, Any]]:
    """Build the trainer and engine (unless given) and run the loop; returns the metrics records.

    Under torchrun every rank calls this: rank 0 runs the loop, the others only their trainer's part
    of each step (`train.ranks`; they build no engine and return no records)."""
    from harnessrl.engines import build_engine

    with join_ranks(cfg.train.trainer, cfg.engine.device) as world:
        trainer = trainer if trainer is not None else build_trainer(cfg, device=world.device)
        if world.channel is not None and world.rank > 0:
            follow(trainer, world.channel)
            return []
        ranks = Ranks(trainer, world.channel)
        try:
            engine = engine if engine is not None else build_engine(cfg.engine)
            loop = TrainLoop(cfg, tasks, trainer, engine, echo=echo, progress=progress, ranks=ranks)
            records = await loop.run()
        except BaseException as e:
            ranks.close(e)
            raise
        ranks.close()
        return records
