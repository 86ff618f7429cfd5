"""Engines: generate from token ids with log-probs, update weights (the `Engine` protocol).

The registry is a literal dict from `EngineConfig.type` to a builder; builders import their engine
lazily, so `import harnessrl.engines` stays free of torch and transformers.

    engine = build_engine(cfg.engine)

- `hf`: the embedded transformers engine (`engines/hf.py`), model from `cfg.model`, context
  `cfg.context_length` or the model's trained length (`models.trained_context`; RoPE stretched
  linearly past it, at a quality cost: see `EngineConfig.context_length`).
- `scripted`: replays the assistant turns in `cfg.script` (`engines/scripted.py`), rendered through
  the chat template of `cfg.model`'s tokenizer; log-probs are zeros (build a `ScriptedEngine` directly
  to score them with a model); `cfg.context_length`, when set, is the context the proxy checks
  prompts against. Script file: JSON, either a list of turns or a list of
  `{"turns": [...], "match": "..."}` scripts; or JSONL, one turn per line. A turn is a string (plain
  text answer) or a ChatMessage object (`{"role": "assistant", "content": ..., "tool_calls": [...]}`).
- `vllm`: a vLLM OpenAI server over HTTP (`engines/vllm.py`): managed (the engine starts `vllm serve`
  on `cfg.model` from the environment `scripts/setup_vllm` makes, and stops it on close) or an
  existing server at `cfg.vllm.url`; weights are reloaded in place after each update.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from harnessrl.engines.config import EngineConfig
from harnessrl.types import ChatMessage, EngineError

if TYPE_CHECKING:
    from harnessrl.engines.scripted import Script
    from harnessrl.protocols import Engine


def _build_hf(cfg: EngineConfig) -> Engine:
    from harnessrl.engines.hf import HFEngine

    return HFEngine.from_config(cfg)


def _turn(raw: Any, where: str) -> ChatMessage | str:
    if isinstance(raw, str):
        return raw
    if isinstance(raw, dict):
        try:
            return ChatMessage.model_validate({**raw, "role": "assistant"})
        except ValidationError as e:
            raise EngineError(f"{where}: not a valid assistant message: {e}") from None
    raise EngineError(f"{where}: a turn must be a string or a message object, got {type(raw).__name__}")


def read_script(path: str | Path) -> list[Script]:
    """Parse a script file (format in the module docstring) into `Script`s."""
    from harnessrl.engines.scripted import Script

    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
        if p.suffix == ".jsonl":
            rows = [json.loads(line) for line in text.splitlines() if line.strip()]
            return [Script(turns=[_turn(r, f"{p}:{i + 1}") for i, r in enumerate(rows)])]
        data = json.loads(text)
    except (OSError, json.JSONDecodeError) as e:
        raise EngineError(f"cannot read script {p}: {e}") from e
    if not isinstance(data, list):
        raise EngineError(f"{p}: expected a JSON list of turns or of scripts")
    if data and all(isinstance(d, dict) and "turns" in d for d in data):
        return [Script(turns=[_turn(t, str(p)) for t in d["turns"]], match=d.get("match")) for d in data]
    return [Script(turns=[_turn(t, str(p)) for t in data])]


def _build_scripted(cfg: EngineConfig) -> Engine:
    from harnessrl.chat.format import ChatFormat
    from harnessrl.engines.models import load_tokenizer
    from harnessrl.engines.scripted import ScriptedEngine

    if cfg.script is None:
        raise EngineError("engine.type = 'scripted' needs engine.script (a JSON or JSONL file of turns)")
    fmt = ChatFormat(load_tokenizer(cfg.model))
    return ScriptedEngine(fmt, read_script(cfg.script), max_context=cfg.context_length)


def _build_vllm(cfg: EngineConfig) -> Engine:
    from harnessrl.engines.vllm import VLLMEngine

    return VLLMEngine.from_config(cfg)


ENGINES: dict[str, Callable[[EngineConfig], Engine]] = {
    "hf": _build_hf,
    "scripted": _build_scripted,
    "vllm": _build_vllm,
}


def build_engine(cfg: EngineConfig) -> Engine:
    """Build the engine named by `cfg.type` (raises EngineError if it cannot be built)."""
    try:
        builder = ENGINES[cfg.type]
    except KeyError:
        raise EngineError(f"unknown engine type {cfg.type!r}; known: {sorted(ENGINES)}") from None
    return builder(cfg)
