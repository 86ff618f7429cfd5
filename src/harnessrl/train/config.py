"""Settings of the trainer (torch-free, so that `harnessrl.config` can embed them)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from harnessrl.rl.config import LossConfig


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class LoraSettings(_Section):
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


class TrainerConfig(_Section):
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
    bf16: bool = False
    """Run forward passes under bf16 autocast (weights and optimizer stay float32)."""
    attention: Literal["sdpa", "flex"] = "sdpa"
    """Tree-mask implementation: dense bool mask to SDPA, or a FlexAttention BlockMask."""
    temperature: float = Field(1.0, gt=0.0)
    """Sampling temperature the rollouts used (log-probs are computed under the same scaling; greedy
    rollouts record log-probs at temperature 1, so use 1.0 for them)."""
    value: Literal["none", "head", "critic"] = "none"
    """PPO value model: none; a linear head on the policy's backbone; or a separate critic model."""
    lora: LoraSettings | None = None
    """Train LoRA adapters instead of all weights."""
    fsdp: bool = False
    """Shard parameters, gradients and optimizer state over torchrun ranks with FSDP2 (full-weight
    training only: not with LoRA or a value model; no checkpoints yet)."""
    seed: int = 0
    """Seed of torch / random at construction (the value head's init, dropout)."""
    loss: LossConfig = Field(default_factory=LossConfig)
    """Policy and value loss settings."""
