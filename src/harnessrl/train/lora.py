"""LoRA through peft: wrap a causal LM, and hand engines plain merged weights.

`merged_state_dict` returns the base model's parameter names with W + delta(LoRA) folded in, computed
out of place: the trained model is left untouched (merging in place and unmerging would not restore W
bit-exactly, which would break exact resume).
"""

from __future__ import annotations

from typing import Any

import torch

from harnessrl.train.config import LoraSettings

_PREFIX = "base_model.model."


def apply_lora(model: Any, cfg: LoraSettings) -> Any:
    """Wrap `model` in a peft LoRA model; only the adapters are trainable."""
    from peft import LoraConfig, get_peft_model

    peft_cfg = LoraConfig(
        r=cfg.r,
        lora_alpha=cfg.alpha,
        lora_dropout=cfg.dropout,
        target_modules=list(cfg.target_modules),
        bias="none",
        task_type="CAUSAL_LM",
    )
    return get_peft_model(model, peft_cfg)


def is_lora(model: Any) -> bool:
    from peft import PeftModel

    return isinstance(model, PeftModel)


def lora_scalings(model: Any) -> dict[str, dict[str, float]]:
    """Per LoRA-wrapped module (base-model name, no peft prefix): active adapter -> scaling (alpha / r).
    Read from the modules, so it also works when the parameters are FSDP shards."""
    from peft.tuners.lora import LoraLayer

    return {
        mname.removeprefix(_PREFIX): {a: float(module.scaling[a]) for a in module.active_adapters}
        for mname, module in model.named_modules()
        if isinstance(module, LoraLayer)
    }


def merge_lora(
    state: dict[str, torch.Tensor], scalings: dict[str, dict[str, float]]
) -> dict[str, torch.Tensor]:
    """A peft state dict (full tensors) -> base-model names with W + sum(B @ A * scaling) folded in, as
    peft's `get_delta_weight` computes it for Linear layers (out of place)."""
    out: dict[str, torch.Tensor] = {}
    for name, t in state.items():
        if ".lora_" not in name:
            out[name.removeprefix(_PREFIX).replace(".base_layer.", ".")] = t.detach()
    with torch.no_grad():
        for stem, adapters in scalings.items():
            key = stem + ".weight"
            for adapter, scaling in adapters.items():
                a = state[f"{_PREFIX}{stem}.lora_A.{adapter}.weight"]
                b = state[f"{_PREFIX}{stem}.lora_B.{adapter}.weight"]
                out[key] = out[key] + (b @ a) * scaling
    return out


def merged_state_dict(model: Any) -> dict[str, torch.Tensor]:
    """Base-model state dict (original names) with every active LoRA delta added to its weight."""
    return merge_lora(model.state_dict(), lora_scalings(model))
