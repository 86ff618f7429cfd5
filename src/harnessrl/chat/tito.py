"""Token-in-token-out: build a call's prompt ids by splicing the exact ids of an earlier call.

Harnesses send the whole conversation back as text on every call. Re-encoding the model's own earlier
turns would train on ids it never sampled (BPE is not stable under decode/encode, and templates such as
Qwen3's drop earlier reasoning). So the proxy remembers every call as a `Turn`; a new request that
extends a remembered turn (its messages, then its output, then only non-model messages) gets
`turn.prompt_ids + turn.output_ids + ids of the new suffix`, and only the suffix (tool results, user
turns, the generation prompt) is tokenized (DESIGN invariant 1).

Matching is by content (`messages_match`): role (developer = system), text, and tool name + arguments.
Ignored: tool-call ids (harnesses rewrite them), reasoning (most APIs do not send it back), and the
tool name / call id on tool results. Cache markers and string-vs-block content are gone before this
point: dialect parsing joins text blocks into one string. Text is compared whitespace-exactly.

Not spliced, rendered from scratch and marked `retokenized` instead: a request with assistant turns but
no matching turn, a changed tool set, and a suffix that holds an assistant message (a turn the engine
did not produce) or a system/developer message (it would be merged into the front system prompt, which
the recorded ids already fixed).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from harnessrl.chat.format import ChatFormat
from harnessrl.types import ChatMessage, RenderMode, ToolSpec


@dataclass
class Turn:
    """What the splicer remembers of one recorded call."""

    call_id: str
    messages: list[ChatMessage]
    """The request's canonical messages."""
    tools: list[ToolSpec]
    prompt_ids: Sequence[int]
    """A list, or the tuple an open proxy session holds (`proxy.sessions.held_ids`)."""
    output_ids: list[int]
    output: ChatMessage
    """The parsed assistant message sent back to the harness."""


@dataclass
class Prompt:
    """The prompt ids for one call and how they were obtained."""

    ids: list[int]
    render: RenderMode
    spliced_from: str | None
    """call_id of the Turn whose prompt + output ids start `ids` (render == "spliced")."""
    messages: list[ChatMessage] | None = None
    """The request's messages as this call's Turn should remember them: when spliced, the matched
    turn's own message objects stand in for the equal ones the client re-sent (and its tool list for
    the equal one), so a session holds each message once, not once per call (a 30-call Claude Code
    conversation re-sends ~3.6 MB of text in all). Equal by `messages_match`, so every later match
    comes out the same. None: the request's messages as they are."""
    tools: list[ToolSpec] | None = None
    """The tool list to remember (see `messages`); None: the request's."""


_SAME_ROLE = {"developer": "system"}


def messages_match(a: ChatMessage, b: ChatMessage) -> bool:
    """Same message by content: role (developer = system), exact text, tool names and arguments."""
    if a.content != b.content:
        return False
    if a.role != b.role and _SAME_ROLE.get(a.role, a.role) != _SAME_ROLE.get(b.role, b.role):
        return False
    calls_a, calls_b = a.tool_calls, b.tool_calls
    if not calls_a and not calls_b:
        return True
    if len(calls_a) != len(calls_b):
        return False
    pairs = zip(calls_a, calls_b, strict=True)
    return all(x.name == y.name and x.arguments == y.arguments for x, y in pairs)


def _extends(turn: Turn, messages: list[ChatMessage], tools: list[ToolSpec]) -> bool:
    """True if `messages` = turn.messages + [turn.output] + non-model messages, with the same tools.
    (Cheapest and most telling checks first: this runs against every remembered turn of a session.)"""
    n = len(turn.messages)
    if n >= len(messages) or not messages_match(turn.output, messages[n]):
        return False
    for x, y in zip(turn.messages, messages, strict=False):
        if not messages_match(x, y):
            return False
    if any(m.role in ("assistant", "system", "developer") for m in messages[n + 1 :]):
        return False
    return turn.tools == tools


def find_turn(history: Sequence[Turn], messages: list[ChatMessage], tools: list[ToolSpec]) -> Turn | None:
    """The most recent turn that `messages` extends (see `_extends`), or None."""
    for turn in reversed(history):
        if _extends(turn, messages, tools):
            return turn
    return None


def build_prompt(
    fmt: ChatFormat, messages: list[ChatMessage], tools: list[ToolSpec], history: Sequence[Turn]
) -> Prompt:
    """Prompt ids for a request: spliced onto a matching recorded turn, else rendered from scratch."""
    turn = find_turn(history, messages, tools)
    if turn is not None:
        closed = bool(turn.output_ids) and turn.output_ids[-1] in fmt.stop_token_ids
        suffix = fmt.suffix_after(messages, tools, len(turn.messages), closed=closed)
        if suffix is not None:
            shared = [*turn.messages, turn.output, *messages[len(turn.messages) + 1 :]]
            ids = [*turn.prompt_ids, *turn.output_ids, *suffix]
            return Prompt(ids, "spliced", turn.call_id, shared, turn.tools)
    mode: RenderMode = "retokenized" if any(m.role == "assistant" for m in messages) else "rendered"
    return Prompt(fmt.render(messages, tools), mode, None)
