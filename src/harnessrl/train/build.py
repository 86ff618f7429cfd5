"""What the training loop runs, built from its sections: the trainer and the schedule.

    trainer = build_trainer(cfg)          # a float32 copy of `engine.model` (+ critic / reference)
    spec = schedule_spec(cfg)             # `train.schedule`'s input: harnesses or the harness space

`trainer_config` fills `train.trainer` in from the run (lr, seed, temperature, total steps, the value
head an algorithm needs); a field that must be set elsewhere is a `ConfigError` naming where.
"""

from __future__ import annotations

from typing import Any

from harnessrl.config_section import ConfigError
from harnessrl.scaling.config import HarnessSpaceConfig
from harnessrl.train.config import TrainerConfig, TrainSections
from harnessrl.train.schedule import ScheduleSpec, SpaceSpec
from harnessrl.train.trainer import Trainer


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


def build_trainer(cfg: TrainSections, device: str | None = None) -> Trainer:
    """A Trainer on its own float32 copy of `engine.model` (plus critic / reference copies if
    configured), on `device` (default `engine.device`; a rank's own GPU under torchrun)."""
    from harnessrl.engines.models import load_model

    tc = trainer_config(cfg)

    def copy() -> Any:
        return load_model(cfg.engine.model, "float32", device or cfg.engine.device)

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
