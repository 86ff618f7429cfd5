"""What the proxy bounds or changes about a call, each decided in one small function: the prompt's
length (context overflow), the output cap, and which of the model's tool calls go back to the client.

Context overflow. A prompt that leaves no room in the engine's context (or is longer than
`proxy.max_prompt_tokens`) is a 400 in the API's own "prompt is too long" shape, worded by its dialect
(`Dialect.overflow`), before generation and before any stream header, so a harness compacts or stops
instead of retrying a 500. Anthropic: `invalid_request_error` "prompt is too long: N tokens > M
maximum ..."; OpenAI: `context_length_exceeded` "This model's maximum context length is M tokens.
However, your messages resulted in N tokens. ..."; Gemini: `INVALID_ARGUMENT` "The input token count
(N) exceeds the maximum number of tokens allowed (M). ...". The message says what to do
(`canonical.fit_advice`): a shorter-prompt mode (Claude Code `bare`, a ~10x shorter system prompt), a
model with a longer context, or a larger `engine.context_length`.

Output cap. The request's own cap (Claude Code asks 32,000-128,000) is honoured up to the context left
after the prompt and up to `engine.sampling.max_tokens` when that is set; a request without a cap
gets the same bound. A lowered cap is noted on the call (`max_tokens_lowered`).

Tool calls, decided here (each dropped or odd call is noted and tagged on the ModelCall; the sampled
ids are always kept whole, so training sees what the model produced):
- `tool_choice: none`: tools are not offered to the model; calls it makes anyway are dropped from the
  response (not turned into text: the harness would show the raw call syntax as an answer).
- `parallel_tool_calls: false` / `disable_parallel_tool_use`: only the first call is returned.
- A call of a tool that was not offered is passed through as the model produced it: the harness
  answers it with an error result, which is a learning signal. Tagged `unknown_tool`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Protocol

from harnessrl.proxy.canonical import CanonicalRequest
from harnessrl.types import RequestError, ToolCall

UNBOUNDED = 1 << 20
"""Output cap when neither the request, the config nor the engine's context bounds it (the scripted
engine without a context length)."""


class OverflowWording(Protocol):
    """The slice of a dialect that words a context overflow (`Dialect.overflow`)."""

    def overflow(self, prompt_tokens: int, limit: int, what: str) -> tuple[str, str | None, str | None]: ...


class ContextOverflow(RequestError):
    """The prompt is longer than the context allows: a 400 in the API's "prompt is too long" shape."""

    def __init__(self, dialect: OverflowWording, prompt_tokens: int, limit: int, what: str) -> None:
        self.prompt_tokens, self.limit = prompt_tokens, limit
        message, param, code = dialect.overflow(prompt_tokens, limit, what)
        super().__init__(message, param=param, code=code)


MAX_CHARS_PER_TOKEN = 32
"""No tokenizer packs more characters than this into one token on average (text runs 3-5): a prompt
with more than `max_prompt_tokens * MAX_CHARS_PER_TOKEN` characters is refused before tokenizing it."""
HEAVY_CHARS = 1 << 20
"""A request with more characters to render than this is prepared only while fewer than
`ProxyDeps.heavy` others are: tokenizing costs ~400 bytes of peak memory per token, and a string of
digits is a token per character, so a few such requests at once (sent by a rollout's own commands)
would take gigabytes from the process that holds every session."""


def request_chars(req: CanonicalRequest) -> int:
    """The characters the chat template renders from `req`: every message's text, reasoning and tool
    call arguments, and every tool's name, description and schema (what the tokenizer will read)."""
    chars = 0
    for m in req.messages:
        chars += len(m.content) + len(m.reasoning or "")
        chars += sum(len(c.name) + len(json.dumps(c.arguments)) for c in m.tool_calls or ())
    for tool in req.tools:
        chars += len(tool.name) + len(tool.description) + len(json.dumps(tool.parameters))
    return chars


def check_prompt_chars(dialect: OverflowWording, chars: int, max_prompt_tokens: int | None) -> None:
    """Raise ContextOverflow for a prompt too long to be worth tokenizing (see MAX_CHARS_PER_TOKEN)."""
    if max_prompt_tokens is not None and chars > max_prompt_tokens * MAX_CHARS_PER_TOKEN:
        at_least = chars // MAX_CHARS_PER_TOKEN
        what = f"{chars} characters, so at least {at_least} tokens"
        what += f"; proxy.max_prompt_tokens is {max_prompt_tokens}"
        raise ContextOverflow(dialect, at_least, max_prompt_tokens, what)


def check_prompt_length(
    dialect: OverflowWording, prompt_tokens: int, context_length: int | None, max_prompt_tokens: int | None
) -> None:
    """Raise ContextOverflow unless the prompt leaves at least one token of room."""
    if context_length is not None and prompt_tokens >= context_length:
        what = f"the engine's context is {context_length} tokens"
        raise ContextOverflow(dialect, prompt_tokens, context_length - 1, what)
    if max_prompt_tokens is not None and prompt_tokens > max_prompt_tokens:
        what = f"proxy.max_prompt_tokens is {max_prompt_tokens}"
        raise ContextOverflow(dialect, prompt_tokens, max_prompt_tokens, what)


def output_cap(
    requested: int | None, ceiling: int | None, context_length: int | None, prompt_tokens: int
) -> tuple[int, str | None]:
    """-> (the cap to sample with, a note when the request's own cap was lowered)."""
    bounds: dict[str, int] = {}
    if ceiling is not None:
        bounds["engine.sampling.max_tokens"] = ceiling
    if context_length is not None:
        bounds["context left after the prompt"] = context_length - prompt_tokens
    if not bounds:
        return (requested if requested is not None else UNBOUNDED), None
    reason, bound = min(bounds.items(), key=lambda kv: kv[1])
    if requested is None or requested <= bound:
        return (requested if requested is not None else bound), None
    return bound, f"max_tokens lowered from {requested} to {bound} ({reason})"


@dataclass
class ToolDecision:
    """Which of the model's tool calls go back to the client, and what was noted."""

    kept: list[int] = field(default_factory=list)
    """Indices (into the parsed calls) returned to the client, in order."""
    notes: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)


def decide_tool_calls(req: CanonicalRequest, calls: list[ToolCall]) -> ToolDecision:
    """Apply `tool_choice: none`, `parallel_tool_calls: false` and mark calls of unknown tools."""
    out = ToolDecision(kept=list(range(len(calls))))
    if req.tool_choice_none and calls:
        out.kept = []
        out.notes.append(f"dropped {len(calls)} tool call(s): tool_choice is none")
        out.tags.append("tool_calls_dropped")
    elif not req.parallel_tool_calls and len(calls) > 1:
        out.kept = [0]
        out.notes.append(
            f"dropped {len(calls) - 1} tool call(s) after the first: parallel tool calls are off"
        )
        out.tags.append("tool_calls_dropped")
    offered = {t.name for t in req.tools}
    unknown = [calls[i].name for i in out.kept if calls[i].name not in offered]
    if unknown:
        out.notes.append(f"called tool(s) that were not offered: {', '.join(sorted(set(unknown)))}")
        out.tags.append("unknown_tool")
    return out
