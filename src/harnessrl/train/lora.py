"""LoRA through peft: wrap a causal LM, and hand engines plain merged weights.

`merged_state_dict` returns the base model's parameter names with W + delta(LoRA) folded in, computed
out of place: the trained model is left untouched (merging in place and unmerging would not restore W
bit-exactly, which would break exact resume).
"""

from __future__ import annotations

from typing import Any

import torch

from harnessrl.config import LoraSettings

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


def merged_state_dict(model: Any) -> dict[str, torch.Tensor]:
    """Base-model state dict (original names) with every active LoRA delta added to its weight."""
    from peft.tuners.lora import LoraLayer

    out: dict[str, torch.Tensor] = {}
    for name, t in model.state_dict().items():
        if ".lora_" in name:
            continue
        out[name.removeprefix(_PREFIX).replace(".base_layer.", ".")] = t.detach()
    with torch.no_grad():
        for mname, module in model.named_modules():
            if isinstance(module, LoraLayer):
                key = mname.removeprefix(_PREFIX) + ".weight"
                delta = sum(module.get_delta_weight(a) for a in module.active_adapters)  # type: ignore[attr-defined]
                out[key] = out[key] + delta
    return out
