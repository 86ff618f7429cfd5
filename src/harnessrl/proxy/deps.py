"""What the proxy needs from the heavy objects around it: narrow protocol slices, wired in `ProxyDeps`.

The proxy never imports an engine or a tokenizer directly. It needs `generate` from the engine;
`stop_token_ids`, `parse` and `count_tokens` from the chat format; and the token-in-token-out splicer
(`build_prompt` plus the `Turn` record it remembers). `default_deps` wires the real ones from
`harnessrl.chat`; tests may wire anything that fits the slices. It also reads what every recorded call
says produced it: the engine's `model_id` and the tokenizer's spec and vocabulary digest (the engine's
`weights_version` comes per call, from the generation result's `meta`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from harnessrl.engines.config import SamplingConfig
from harnessrl.protocols import GenerationResult, SamplingParams
from harnessrl.proxy.config import ProxyConfig
from harnessrl.proxy.sessions import SessionStore
from harnessrl.types import ChatMessage, RenderMode, ToolCall, ToolSpec

HEAVY_AT_ONCE = 2
"""Heavy requests (`limits.HEAVY_CHARS`) prepared at once by one proxy: two of the largest the default
`proxy.max_prompt_tokens` lets through (~8M characters) peak near 3 GB each while tokenized."""


class Generator(Protocol):
    """The engine slice: generate from exact prompt ids."""

    async def generate(self, prompt_ids: list[int], sampling: SamplingParams) -> GenerationResult: ...


class ParsedLike(Protocol):
    """The parsed assistant turn (`chat.parse.ParsedOutput`)."""

    text: str
    reasoning: str | None
    tool_calls: list[ToolCall]
    malformed: list[str]

    def message(self) -> ChatMessage: ...


class FormatSlice(Protocol):
    """The chat-format slice (`chat.format.ChatFormat`)."""

    stop_token_ids: tuple[int, ...]

    def parse(self, output_ids: list[int]) -> Any: ...

    def count_tokens(self, messages: list[ChatMessage], tools: list[ToolSpec]) -> int: ...

    def token_texts(self, ids: list[int]) -> list[str]: ...


class PromptLike(Protocol):
    """`chat.tito.Prompt`."""

    ids: list[int]
    render: RenderMode
    spliced_from: str | None
    messages: list[ChatMessage] | None
    """The messages the call's Turn remembers (shared with earlier turns), None: the request's."""
    tools: list[ToolSpec] | None


PromptBuilder = Callable[[Any, list[ChatMessage], list[ToolSpec], Sequence[Any]], PromptLike]
"""`build_prompt(fmt, messages, tools, history_turns) -> Prompt`."""


@dataclass
class ProxyDeps:
    """Everything `make_app` wires together."""

    engine: Generator
    fmt: FormatSlice
    sessions: SessionStore
    build_prompt: PromptBuilder
    make_turn: Callable[..., Any]
    """`Turn(call_id=, messages=, tools=, prompt_ids=, output_ids=, output=)`."""
    config: ProxyConfig = field(default_factory=ProxyConfig)
    sampling: SamplingConfig = field(default_factory=SamplingConfig)
    """Temperature and top-p of every call, and the cap on output tokens. The harness's own temperature
    is ignored: the trainer, not the harness, decides how the policy samples."""
    model_name: str = "harnessrl"
    """Listed by `GET /v1/models`."""
    context_length: int | None = None
    """The engine's context in tokens (prompt + output); None = unknown (no length check, no room cap).
    `default_deps` takes it from the engine's `max_context`."""
    model_id: str = ""
    """Recorded on every ModelCall: the engine's `model_id` (`default_deps`)."""
    tokenizer: str = ""
    """Recorded on every ModelCall: where the format's tokenizer loads from (`tokenizer_spec`)."""
    tokenizer_digest: str = ""
    """Recorded on every ModelCall: `vocab_digest` of the format's tokenizer."""
    heavy: asyncio.Semaphore = field(default_factory=lambda: asyncio.Semaphore(HEAVY_AT_ONCE))
    """Requests of `limits.HEAVY_CHARS` bytes and more being prepared at once (`handler.in_thread`)."""


def default_deps(
    engine: Generator,
    fmt: FormatSlice,
    sessions: SessionStore,
    config: ProxyConfig | None = None,
    sampling: SamplingConfig | None = None,
    model_name: str = "harnessrl",
) -> ProxyDeps:
    """Wire the real token-in-token-out splicer from `harnessrl.chat.tito`."""
    from harnessrl.chat.tito import Turn, build_prompt
    from harnessrl.chat.tokenizers import hf_vocab_digest, tokenizer_spec

    tok = getattr(fmt, "tokenizer", None)
    return ProxyDeps(
        engine=engine,
        fmt=fmt,
        sessions=sessions,
        build_prompt=build_prompt,
        make_turn=Turn,
        config=config or ProxyConfig(),
        sampling=sampling or SamplingConfig(),
        model_name=model_name,
        context_length=getattr(engine, "max_context", None),
        model_id=str(getattr(engine, "model_id", "") or ""),
        tokenizer=tokenizer_spec(tok) if tok is not None else "",
        tokenizer_digest=hf_vocab_digest(tok) if tok is not None else "",
    )
