"""Loading the causal LMs the trainer optimises: a local checkpoint, or a tiny random one for tests.

Left out: downloading from the Hub (the machines that train are offline; pass a local folder) and
GGUF checkpoints (the embedded engine owns the `default` SmolLM2 GGUF; export it to a folder first).
"""

from __future__ import annotations

from typing import Any

import torch


def load_causal_lm(path: str, *, dtype: torch.dtype = torch.float32, attention: str = "sdpa") -> Any:
    """A transformers causal LM from a local folder, in `dtype`, with the given attention implementation."""
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(
        path, dtype=dtype, attn_implementation=attention, local_files_only=True
    )


def tiny_causal_lm(
    *,
    vocab_size: int = 64,
    hidden_size: int = 64,
    layers: int = 2,
    heads: int = 4,
    kv_heads: int = 2,
    max_positions: int = 4096,
    seed: int = 0,
    attention: str = "sdpa",
) -> Any:
    """A randomly initialised Qwen3-architecture model (float32), deterministic for a given seed."""
    from transformers import AutoModelForCausalLM

    from harnessrl.engines.models import small_qwen3_config

    cfg = small_qwen3_config(
        vocab_size=vocab_size,
        hidden=hidden_size,
        layers=layers,
        heads=heads,
        kv_heads=kv_heads,
        max_positions=max_positions,
        tie_embeddings=False,
    )
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = AutoModelForCausalLM.from_config(cfg, attn_implementation=attention, dtype=torch.float32)
    return model
