"""The engines' context length: the registry of trained lengths, `engine.context_length` with RoPE
stretched linearly past the trained length, and the proxy learning the context from the engine."""

from __future__ import annotations

import pytest
import torch

from harnessrl.chat.format import ChatFormat
from harnessrl.config import EngineConfig
from harnessrl.engines.hf import HFEngine
from harnessrl.engines.models import load_model, stretch_context, tiny_qwen3, trained_context
from harnessrl.proxy.deps import default_deps
from harnessrl.proxy.sessions import SessionStore
from harnessrl.types import EngineError


def test_trained_context_registry() -> None:
    assert (trained_context("default"), trained_context("tiny-qwen3")) == (8192, 4096)


def test_context_length_past_the_trained_one_stretches_rope_linearly() -> None:
    plain = load_model("tiny-qwen3")
    long = load_model("tiny-qwen3", context_length=8192)
    assert long.config.rope_parameters == {"rope_theta": 10000.0, "rope_type": "linear", "factor": 2.0}
    assert long.config.max_position_embeddings == 8192
    assert torch.equal(long.model.rotary_emb.inv_freq, plain.model.rotary_emb.inv_freq / 2)
    for name, tensor in plain.state_dict().items():  # same weights: only positions are compressed
        assert torch.equal(long.state_dict()[name], tensor), name
    short = load_model("tiny-qwen3", context_length=1024)
    assert (short.config.max_position_embeddings, short.config.rope_parameters["rope_type"]) == (
        1024,
        "default",
    )


def test_a_position_scheme_that_cannot_be_stretched_is_refused() -> None:
    config = tiny_qwen3()[0].config
    config.rope_parameters = {"rope_theta": 10000.0, "rope_type": "yarn", "factor": 4.0}
    with pytest.raises(EngineError, match="cannot be stretched; use a model with a longer context"):
        stretch_context(config, 8192)


async def test_the_proxy_learns_the_engines_context() -> None:
    engine = HFEngine.from_config(EngineConfig(model="tiny-qwen3", context_length=6000))
    try:
        assert engine.max_context == 6000
        deps = default_deps(engine, ChatFormat(engine.tokenizer), SessionStore())
        assert deps.context_length == 6000
    finally:
        await engine.close()
