"""A live proxy over the scripted engine and the real Qwen3 tokenizer, for tests and benchmarks.

    server = scripted_proxy(["done"]).start()       # ThreadedProxyServer on a free 127.0.0.1 port
    info = server.server.deps.sessions.open("r0")   # (opened from the test thread: fine before traffic)

`SlowEngine` delays every generation (keep-alive tests); `FailingEngine` raises on chosen calls.
`turn_from_decision` turns a captured fixture's `reply.decision` into the scripted assistant turn.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Sequence
from typing import Any

from harnessrl.engines.config import SamplingConfig
from harnessrl.protocols import GenerationResult, SamplingParams
from harnessrl.proxy.config import ProxyConfig
from harnessrl.proxy.deps import Generator, ProxyDeps, default_deps
from harnessrl.proxy.server import ThreadedProxyServer
from harnessrl.proxy.sessions import SessionStore
from harnessrl.types import ChatMessage, ToolCall


class SlowEngine:
    """Wraps an engine; every generate sleeps `delay_s` first."""

    def __init__(self, inner: Generator, delay_s: float) -> None:
        self.inner = inner
        self.delay_s = delay_s

    async def generate(self, prompt_ids: list[int], sampling: SamplingParams) -> GenerationResult:
        await asyncio.sleep(self.delay_s)
        return await self.inner.generate(prompt_ids, sampling)


def turn_from_decision(decision: Sequence[Any]) -> ChatMessage | str:
    """`["tool", name, args, kind]` -> an assistant tool call; `["text", text]` -> text."""
    if decision[0] == "tool":
        return ChatMessage(
            role="assistant", tool_calls=[ToolCall(name=decision[1], arguments=dict(decision[2]))]
        )
    return str(decision[1])


def scripted_deps(
    turns: Sequence[ChatMessage | str] | Sequence[Any],
    *,
    config: ProxyConfig | None = None,
    sampling: SamplingConfig | None = None,
    fault_calls: Collection[int] = (),
    delay_s: float = 0.0,
    open_mode: bool = False,
    capture_dir: str | None = None,
    enable_thinking: bool = False,
    max_context: int | None = None,
    scorer: Any = None,
) -> ProxyDeps:
    """ProxyDeps over `ScriptedEngine(ChatFormat(qwen3_tokenizer()), turns)` (turns: messages, texts or
    `engines.scripted.Script`s); with `enable_thinking`, turns' reasoning is emitted as `<think>`.
    The engine repeats its last turn when a prompt has more turns; `max_context` is its context (the
    proxy's length check), `scorer` gives its log-probs (`ScriptedEngine`)."""
    from harnessrl.chat.format import ChatFormat
    from harnessrl.chat.tokenizers import qwen3_tokenizer
    from harnessrl.engines.scripted import ScriptedEngine

    fmt = ChatFormat(qwen3_tokenizer(), enable_thinking=enable_thinking)
    engine: Generator = ScriptedEngine(
        fmt,
        list(turns),
        fault_calls=fault_calls,
        exhausted="repeat_last",
        max_context=max_context,
        scorer=scorer,
    )
    if delay_s > 0:
        engine = SlowEngine(engine, delay_s)
    sessions = SessionStore(capture_dir, open_mode=open_mode)
    deps = default_deps(engine, fmt, sessions, config=config, sampling=sampling)
    deps.context_length = max_context
    return deps


def scripted_proxy(turns: Sequence[Any], **kwargs: Any) -> ThreadedProxyServer:
    """A (not yet started) threaded proxy over `scripted_deps(turns, **kwargs)`."""
    return ThreadedProxyServer(scripted_deps(turns, **kwargs))
