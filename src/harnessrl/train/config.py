"""Config sections of `train/`: the RL loop, its trainer, the failure policy and cold-start SFT.

Assembled into `harnessrl.config.Config`, which re-exports them. A section module imports only
pydantic, `Section` and other section modules, so `harnessrl.config` never imports what they configure.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from harnessrl.config_section import Section
from harnessrl.report.config import TrackingConfig
from harnessrl.rl.config import AdvantageConfig, AlgorithmName, LossConfig
from harnessrl.rollout.config import RolloutSections
from harnessrl.scaling.config import HarnessSpaceConfig
from harnessrl.trace.config import TraceConfig


class LoraSettings(Section):
    """LoRA adapters (peft) instead of full fine-tuning."""

    r: int = 16
    """Rank of the adapters."""
    alpha: int = 32
    """Scaling numerator (the update is scaled by alpha / r)."""
    dropout: float = 0.0
    """Dropout on the adapter input (0 keeps steps deterministic)."""
    target_modules: list[str] = Field(
        default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
    )
    """Module names that get adapters."""


class TrainerConfig(Section):
    """One optimizer step = all micro-batches of the step's trees, accumulated, then AdamW."""

    lr: float = 1e-6
    """AdamW learning rate (peak, after warmup)."""
    weight_decay: float = 0.0
    """AdamW decoupled weight decay."""
    betas: tuple[float, float] = (0.9, 0.999)
    """AdamW betas."""
    adam_eps: float = 1e-8
    """AdamW epsilon."""
    warmup_steps: int = 0
    """Linear warmup from 0 to lr over this many steps."""
    schedule: Literal["constant", "linear", "cosine"] = "constant"
    """Learning-rate decay after warmup (linear / cosine decay to 0 at `total_steps`)."""
    total_steps: int = 1000
    """Horizon of the linear / cosine decay."""
    grad_clip: float | None = 1.0
    """Clip the global gradient norm to this (None = no clipping; the norm is logged either way)."""
    token_budget: int = 4096
    """Most tokens in one packed micro-batch (a bigger tree gets a micro-batch of its own)."""
    share_prefixes: bool = True
    """Lay a prompt prefix shared by several trees of a step out once (`rl.packing.share_prefixes`:
    exact; model tokens are never shared), in forests of at most `token_budget` tokens."""
    bf16: bool = False
    """Run forward passes under bf16 autocast (weights and optimizer stay float32)."""
    attention: Literal["sdpa", "flex", "tree"] = "sdpa"
    """Tree-mask implementation: dense bool mask to SDPA, a FlexAttention BlockMask, or chunked tree
    attention (`rl.tree_attention`: SDPA per chunk of rows against its ancestors only; faster on CPU)."""
    temperature: float = Field(1.0, gt=0.0)
    """Sampling temperature the rollouts used (log-probs are computed under the same scaling; greedy
    rollouts record log-probs at temperature 1, so use 1.0 for them)."""
    value: Literal["none", "head", "critic"] = "none"
    """PPO value model: none; a linear head on the policy's backbone; or a separate critic model."""
    lora: LoraSettings | None = None
    """Train LoRA adapters instead of all weights."""
    fsdp: bool = False
    """Shard parameters, gradients and optimizer state over torchrun ranks with FSDP2 (full weights or
    LoRA; not with a value model); checkpoints are then sharded, one set of shards per rank."""
    world_size: int = Field(default=1, ge=1)
    """Trainer ranks, one process each (`train/ranks.py`). Rank 0 runs the loop (rollouts, engine,
    metrics); every rank runs the update on its share of the step's trees (FSDP2 with `fsdp`, else
    replicated weights). Under torchrun the launcher's WORLD_SIZE is used and this must be 1 or equal
    to it; `harnessrl train` started without torchrun and this > 1 starts itself under
    `torch.distributed.run` with this many ranks on this machine."""
    collective_timeout_s: float = Field(default=600.0, gt=0)
    """A collective of the update (gradient reductions, FSDP gathers, checkpoint barriers) that has not
    completed after this many seconds ends the job with an error instead of hanging (a rank died)."""
    idle_timeout_s: float = Field(default=14400.0, gt=0)
    """How long ranks other than 0 wait for rank 0's next order (it runs a step's rollouts in
    between) before ending the job with an error."""
    seed: int = 0
    """Seed of torch / random at construction (the value head's init, dropout)."""
    loss: LossConfig = Field(default_factory=LossConfig)
    """Policy and value loss settings."""


TrainableStatus = Literal["timeout", "harness_error", "sandbox_error", "engine_error", "verifier_error"]


TRAINABLE_STATUSES: tuple[TrainableStatus, ...] = (
    "timeout",
    "harness_error",
    "sandbox_error",
    "engine_error",
    "verifier_error",
)


class FailurePolicyConfig(Section):
    """Which failed rollouts train (DESIGN "Failure policy"), and the smallest GRPO group kept."""

    train_statuses: list[TrainableStatus] = Field(default_factory=lambda: list(TRAINABLE_STATUSES))
    """Statuses trained with reward 0 on the calls they made, when the policy caused them
    (`Rollout.fault == "policy"`: a timeout, the harness failing after talking to the model, the
    sandbox dying under its commands, a prompt over the context after the first call, the checker
    failing on its workspace, a workspace over the caps), as ClawGym scores them 0 to keep GRPO
    groups full. All five by default: a policy-caused failure left out of training is a way out of
    an honest 0 that the policy learns to take (a rollout heading for 0 that crashes its checker is
    never pushed down). `[]` = train only `ok` rollouts. Failures of the infrastructure
    (`fault == "infra"`) are never trained, whatever this says."""
    min_group_size: int = Field(default=2, ge=1)
    """GRPO: a group with fewer trainable rollouts than this (capped at `train.group_size`) is
    dropped whole, labelled `filtered:small_group` (one rollout alone has no advantage)."""


class TrainConfig(Section):
    algorithm: AlgorithmName = "grpo"
    """Advantage estimator: a name in `harnessrl.rl.config.AlgorithmName`, the class registered under
    it in `harnessrl.rl.algo.ALGORITHMS` (ppo adds a value head unless
    `trainer.value` names one)."""
    advantage: AdvantageConfig = Field(default_factory=AdvantageConfig)
    """Settings of the estimator (GRPO std normalisation and eps; PPO gamma and lambda; `mode`:
    rollout-level or tree-aware credit)."""
    segments: Literal["exclude", "outcome", "credited"] = "exclude"
    """Compaction and sub-agent calls (`harnessrl.trace.segments`): exclude = not trained (ClawGym
    II's choice; RL no longer reads `trace.keep_compaction` / `trace.keep_subagents`); outcome =
    trained with their rollout's advantage; credited = trained with credit of their own (a summary
    from the steps that ran on it, a sub-agent from its parent step weighted by whether its answer
    was used: `harnessrl.rl.credit`). A rollout's tokens share its weight either way."""
    lr: float = 1e-6
    """AdamW learning rate."""
    steps: int = 10
    """Optimizer steps."""
    seed: int = 0
    """Global seed."""
    out_dir: str = "runs/train"
    """Checkpoints and logs."""
    categories: list[str] = Field(default_factory=list)
    """Train only on tasks of these categories (empty = all); applied before `tasks.limit`."""
    allow_internet_tasks: bool = False
    """Train on tasks that say their agent needs the internet (Harbor `allow_internet = true` or
    `network_mode = "public"`, `TaskEnvironment.internet`). Off by default: harnessrl sandboxes give
    the agent no network but the model's, so training refuses such tasks with a message naming them;
    with this on they run offline."""
    tasks_per_step: int = Field(default=2, ge=1)
    """Tasks drawn per step (epoch-wise shuffled by `seed`, so every task comes up once per epoch)."""
    group_size: int = Field(default=2, ge=1)
    """Rollouts per GRPO group; a group is one (task, harness) pair."""
    harnesses: list[str] = Field(default_factory=list)
    """Harnesses mixed in one batch (groups never mix them); empty = `[rollout.harness]`."""
    harnesses_per_task: int = Field(default=0, ge=0)
    """How many of `harnesses` each drawn task runs under (drawn per step); 0 = all of them."""
    harness_options: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """Adapter switches per harness name, e.g. `{"claude-code" = {bare = true}}`."""
    failures: FailurePolicyConfig = Field(default_factory=FailurePolicyConfig)
    """Failure policy: which failed rollouts train with reward 0, the smallest GRPO group kept."""
    harness_space: HarnessSpaceConfig | None = None
    """Harness scaling instead of `harnesses`: each drawn task runs under one white-box configuration
    per occasion (K-pairing over a design); e.g. `[train.harness_space] design = "oa-18", k = 2`."""
    save_every: int = Field(default=0, ge=0)
    """Checkpoint every this many steps (0 = only at the end); the last step is always saved."""
    keep_checkpoints: int = Field(default=2, ge=0)
    """Newest checkpoints kept under `out_dir`; older ones are removed after each save (0 = keep all).
    A full checkpoint holds weights and optimizer state: ~1.6 GB for SmolLM2-135M in float32."""
    resume: bool = False
    """Continue from the latest checkpoint under `out_dir` (same schedule, next step)."""
    max_off_policy_steps: int = Field(default=0, ge=0)
    """Asynchronous rollouts: the rollouts of step s start once step s - k - 1 is trained, so they run
    while the trainer updates and are at most k policy versions old when trained (0 = synchronous:
    each step samples from the weights of the step before)."""
    dynamic_sampling_rounds: int = Field(default=0, ge=0)
    """Dynamic sampling (DAPO; GRPO only): after a step's rollouts, each group without reward
    variance (all solved or all failed: zero advantage) is replaced by a group of a task the step has
    not run, in up to this many rounds, until the step holds as many informative groups as it
    scheduled; groups without variance are then not trained (`train/dynamic.py`). Each round costs
    rollouts and wall time, so the default 0 keeps a step's budget fixed at tasks_per_step x
    group_size rollouts per harness; 2-3 rounds fill most steps when some tasks are learnable."""
    stale_rollouts: Literal["drop", "keep"] = "drop"
    """An ok rollout found more than `max_off_policy_steps` versions old when trained: dropped as
    `filtered:stale`, or kept (its tokens corrected by the truncated IS weight like any other)."""
    trainer: TrainerConfig = Field(default_factory=TrainerConfig)
    """Optimizer and loss settings; its `lr` and `seed` are replaced by `train.lr` and `train.seed`,
    its `temperature` by `engine.sampling.temperature` (log-probs must match what was sampled)."""


class SftConfig(Section):
    """`harnessrl sft`: cold-start supervised fine-tuning on kept tree paths (`harnessrl.train.sft`)."""

    demonstrations: bool = True
    """Make demonstrations: run `sft.harness` on every task with the scripted engine replaying the
    task's reference solution; the successful ones (reward >= `min_score`) are trained on."""
    harness: str | None = None
    """Harness of the demonstrations (None = `rollout.harness`)."""
    rollouts: list[str] = Field(default_factory=list)
    """Rollout folders (or folders of rollout folders) to learn from as well; only `ok` rollouts with
    reward >= `min_score` are kept, their model tokens trained with exactly the recorded ids."""
    min_score: float = 1.0
    """Rollouts (and demonstrations) scoring below this are not trained on."""
    steps: int = Field(default=5, ge=0)
    """Optimizer steps (few on purpose: an early-stopped SFT leaves RL groups with variance)."""
    batch_size: int = Field(default=16, ge=1)
    """Trees per optimizer step (drawn epoch-wise, shuffled by `seed`)."""
    lr: float = 1e-5
    """AdamW learning rate (`train.trainer` supplies the other optimizer settings)."""
    heldout_every: int = Field(default=5, ge=0)
    """Every n-th tree (in task order) is held out: its NLL is reported before and after (0 = none)."""
    eval_every: int = Field(default=1, ge=0)
    """Measure the held-out NLL after every n-th step (0 = only before the first and after the last;
    each measurement is a forward pass over the held-out trees)."""
    seed: int = 0
    """Seed of the draw order and of the trainer."""
    out_dir: str = "runs/sft"
    """`model/` (a model folder: `engine.model` for `train` and `eval`), `checkpoints/step-<n>/`
    (the trainer format of RL), `sft.json` (NLL per step), `demos/` (the demonstration rollouts)."""


class TrainSections(RolloutSections):
    """What `train.loop.train` and `train.sft.sft` read: the rollout sections plus the loop, the
    prefix-tree filters, cold-start SFT and the trackers."""

    train: TrainConfig = Field(default_factory=TrainConfig)
    """The RL loop (`harnessrl train`) and its trainer."""
    trace: TraceConfig = Field(default_factory=TraceConfig)
    """Prefix-tree filters."""
    sft: SftConfig = Field(default_factory=SftConfig)
    """Cold-start SFT (`harnessrl sft`)."""
    tracking: TrackingConfig = Field(default_factory=TrackingConfig)
    """Experiment trackers besides TensorBoard (`report.trackers`)."""
