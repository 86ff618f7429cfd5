"""Config sections of `experiments/`: the quickstart and the harness-scaling ablation.

Assembled into `harnessrl.config.Config`, which re-exports them. A section module imports only
pydantic, `Section` and other section modules, so `harnessrl.config` never imports what they configure.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from harnessrl.config_section import Section
from harnessrl.evaluate.config import EvalSections
from harnessrl.train.config import TrainSections


class QuickstartConfig(Section):
    """`harnessrl quickstart`: demonstrations -> SFT -> eval -> GRPO -> eval on generated tasks."""

    out_dir: str = "runs/quickstart"
    """Everything goes here, one folder per stage (`tasks/`, `sft/`, `rl/`, `eval/<policy>/`); a stage
    whose inputs are unchanged (`stage.json`) is reused by the next run."""
    families: list[str] = Field(default_factory=list)
    """Generated task families trained and evaluated on (empty = every train family)."""
    train_per_family: int = Field(default=8, ge=1)
    """Generated train instances per family (demonstrations and RL draw from these)."""
    heldout_per_family: int = Field(default=3, ge=1)
    """Held-out instances per family (never trained on): the evaluation set."""
    task_seed: int = 0
    """Seed of the task generator."""
    harness: str = "whitebox:00000"
    """The harness of every stage (demonstrations, RL, evaluation)."""


class AblationConfig(Section):
    """`scripts/scaling_ablation` (`harnessrl.experiments.ablation`): one GRPO run per harness-space design
    from one shared cold start, each evaluated on in-space held-out and out-of-space harnesses."""

    out_dir: str = "runs/scaling-ablation"
    """One folder per stage (`tasks/`, `sft/`, `arm-<name>/`, `eval/<policy>/`), reused like quickstart's."""
    arms: list[str] = Field(default_factory=lambda: ["single", "random-18", "oa-18"])
    """Designs trained, one GRPO run each (names in `scaling.DESIGNS`), with `train.harness_space`'s k
    and pairing (`single` pairs by `repeat`: it has one configuration)."""
    families: list[str] = Field(default_factory=list)
    """Generated task families (empty = every train family)."""
    train_per_family: int = Field(default=8, ge=1)
    """Generated train instances per family (demonstrations and RL)."""
    heldout_per_family: int = Field(default=1, ge=1)
    """Held-out instances per family: the evaluation tasks."""
    task_seed: int = 0
    """Seed of the generated task instances."""
    sft_codes: list[str] = Field(default_factory=lambda: ["00000", "11100", "22200"])
    """White-box configurations of the shared cold-start demonstrations (every arm starts from it).
    The default shows each level of prompt, tool interface and observation once, with full context
    and the free loop, so the scripted demonstrations are clean (no progress markers)."""
    eval_configs: int = Field(default=18, ge=0)
    """In-space held-out configurations evaluated: a seeded draw from the codes outside every arm's
    training set and outside `sft_codes`."""
    out_of_space: list[str] = Field(default_factory=lambda: ["claude-code"])
    """Real harnesses evaluated (out of the space); options from `eval.harness_options`."""
    base_model_row: bool = False
    """Also evaluate the untrained `engine.model` (the cold start is always evaluated)."""


class TransferConfig(Section):
    """`scripts/harness_transfer` (`harnessrl.experiments.transfer`): from one shared cold start, one
    GRPO run per arm (a set of training harnesses) and seed, each policy evaluated through every
    `eval_harnesses`: the train-in-A, evaluate-in-B matrix."""

    out_dir: str = "runs/transfer"
    """One folder per stage (`tasks/`, `sft/`, `arm-<arm>-s<seed>/`, `eval/<policy>/`), reused like the
    quickstart's."""
    arms: dict[str, list[str]] = Field(
        default_factory=lambda: {
            "whitebox": ["whitebox:00000"],
            "claude-code": ["claude-code"],
            "mixed": ["whitebox:00000", "claude-code"],
        }
    )
    """Arm name -> the harnesses it trains through. Every arm has the same budget (`train.steps` x
    `train.tasks_per_step` x `train.group_size` rollouts): a drawn task runs under ONE of an arm's
    harnesses (`train.harnesses_per_task = 1`), each (task, harness) its own GRPO group."""
    eval_harnesses: list[str] = Field(
        default_factory=lambda: ["whitebox:00000", "claude-code", "whitebox:21220"]
    )
    """Every policy is evaluated through each of these (options from `eval.harness_options`); put at
    least one that no arm trains in (the default's `whitebox:21220` is 4 factors from 00000)."""
    seeds: list[int] = Field(default_factory=lambda: [0, 1], min_length=1)
    """RL seeds (`train.seed`): one GRPO run per arm and seed, all from the same cold start."""
    families: list[str] = Field(default_factory=list)
    """Generated train families (empty = every train family)."""
    train_per_family: int = Field(default=8, ge=1)
    """Generated train instances per family (demonstrations and RL)."""
    rl_per_family: int = Field(default=0, ge=0)
    """Train instances per family for RL that the cold start never saw (the next ones of the same
    stream, distinct from the demonstrated ones and from each other); 0: RL on the demonstrated tasks,
    as the quickstart does (the cold start solves most of them, so most GRPO groups have no variance)."""
    heldout_per_family: int = Field(default=10, ge=1)
    """Held-out instances per train family (never trained on): the main evaluation set."""
    heldout_family: int = Field(default=10, ge=0)
    """Instances of the held-out family (`json_field`, never trained on): out-of-family transfer."""
    task_seed: int = 0
    """Seed of the generated train instances (0: the quickstart's train set)."""
    heldout_seed: int = 2026
    """Seed of the fresh held-out set (`evaluate.heldout.heldout_set`: distinct instances whose prompts
    occur in no train split, none of the quickstart's or the ablation's); never a train seed."""
    sft_harnesses: list[str] = Field(default_factory=list)
    """Harnesses of the cold-start demonstrations (empty = every harness of every arm), so no arm
    starts unable to act in the harnesses it trains in."""
    base_model_row: bool = True
    """Also evaluate the untrained `engine.model`."""
    arm_train: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """Arm name -> `train` fields that arm sets on top of `[train]`, so two arms through the same
    harness compare a training setting (`{"whitebox-dynamic": {"dynamic_sampling_rounds": 3}}`):
    the arm then has its own budget. Not the fields the experiment sets per arm (`harnesses`,
    `harnesses_per_task`, `harness_space`, `seed`, `out_dir`, `resume`)."""


class RunSections(TrainSections, EvalSections):
    """What the experiments' shared stages read (cold start, training, evaluation): every section but
    the experiments' own."""


class QuickstartSections(RunSections):
    """What `experiments.quickstart.run_quickstart` reads."""

    quickstart: QuickstartConfig = Field(default_factory=QuickstartConfig)
    """`harnessrl quickstart`."""


class AblationSections(RunSections):
    """What `experiments.ablation.run_ablation` reads."""

    ablation: AblationConfig = Field(default_factory=AblationConfig)
    """The harness-scaling ablation (`scripts/scaling_ablation`)."""


class TransferSections(RunSections):
    """What `experiments.transfer.run_transfer` reads."""

    transfer: TransferConfig = Field(default_factory=TransferConfig)
    """The harness-transfer experiment (`scripts/harness_transfer`)."""
