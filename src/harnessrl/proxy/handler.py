"""One model call, in named stages: parse -> validate -> (session) -> prompt -> generate -> record -> format.

The HTTP layer (`app.py`) resolves the session and reads the body; `body.py` decodes it; everything from
the dialect's parse to the response bytes is here. Generation runs in its own task, so that a client
that goes away mid-stream does not cancel it: the call is still recorded (marked `partial`) and a retry
can replay it.

Failure handling, by stage: parse / validate / prompt raise `RequestError` (a 4xx in the dialect's shape;
a prompt too long for the context is also recorded as a failed call, tagged `context_overflow`); an
engine failure becomes an `CallOutcome` with an error (500 for that call only); the record stage catches
and logs everything (capture must never break serving) and counts what it lost on the session
(`Session.dropped`), so a rollout with a lost call is never trained as if complete.

Requests of `LARGE_BODY` bytes and up (every real harness call: Claude Code's are 50-180 KB) are
decoded, parsed, rendered and tokenized in a worker thread, so one call with a large new suffix does
not stall the other sessions' calls on the event loop (the Rust tokenizer releases the GIL while it
encodes; `tests/test_proxy_off_loop.py`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from harnessrl.protocols import GenerationResult, SamplingParams
from harnessrl.proxy import capture, limits
from harnessrl.proxy.body import parse_body
from harnessrl.proxy.canonical import CanonicalRequest, Completion, new_id, validate_messages
from harnessrl.proxy.deps import ParsedLike, PromptLike, ProxyDeps
from harnessrl.proxy.dialects.base import Dialect
from harnessrl.proxy.sessions import Session, held_ids
from harnessrl.types import ChatMessage, ModelCall, RequestError, ToolCall

log = logging.getLogger(__name__)

T = TypeVar("T")
LARGE_BODY = 16 * 1024
"""Bodies from this size on are parsed, rendered and tokenized off the event loop (`prepare`). A
smaller body brings at most ~4k new tokens (~10 ms); there the thread hop would cost more than it
saves. (It was 256 KiB: a 240 KB body of new text held every other call ~0.3 s behind it.)"""


@dataclass
class CallOutcome:
    """What a call produced: a completion, or an error; and the ids behind it."""

    completion: Completion | None
    result: GenerationResult | None
    sampled_by: str = ""
    """call_id of the call whose generation produced this output."""
    message: ChatMessage | None = None
    """The parsed assistant message (what the splicer remembers)."""
    malformed: bool = False
    """The output held a block the chat format could not read (sent as plain text)."""
    error: str | None = None
    replay_of: str | None = None
    notes: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)


@dataclass
class Call:
    """A request moving through the stages."""

    deps: ProxyDeps
    dialect: Dialect
    session: Session
    headers: Mapping[str, str]
    raw: bytes
    req: CanonicalRequest
    call_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    started_at: float = field(default_factory=time.time)
    index: int = -1
    response_id: str = ""
    prompt: PromptLike | None = None
    request_digest: str = ""
    partial: bool = False
    recorded: ModelCall | None = None
    max_tokens: int = 0
    """The output cap sampled with (`limits.output_cap`)."""
    notes: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    replaced_images: int = 0
    overflow: limits.ContextOverflow | None = None


# -- parse / validate --------------------------------------------------------------------------------


def parse_and_validate(dialect: Dialect, body: dict[str, Any]) -> CanonicalRequest:
    """Stages parse (dialect) and validate (dialect-independent consistency)."""
    req = dialect.parse(body)
    validate_messages(req.messages)
    return req


def parse_request(
    deps: ProxyDeps, dialect: Dialect, raw: bytes, content_type: str
) -> tuple[CanonicalRequest, int]:
    """Body bytes -> (canonical request, image parts replaced by a placeholder). With
    `proxy.images = "reject"` an image is a 400."""
    body = parse_body(raw, content_type, deps.config.max_body_bytes)
    images = dialect.count_images(raw, body)
    if images and deps.config.images == "reject":
        raise RequestError(
            f"the request holds {images} image part(s); this policy reads text only (proxy.images = reject)"
        )
    return parse_and_validate(dialect, body), images


# -- prompt --------------------------------------------------------------------------------------------


def prompt_stage(call: Call) -> None:
    """Token-in-token-out: splice onto the session's recorded turns, or render from scratch. A
    conversation that the chat template refuses to render is the client's fault: a 400. Then the
    length check (`limits.check_prompt_length`) and the output cap (`limits.output_cap`)."""
    deps = call.deps
    limits.check_prompt_chars(call.dialect, limits.request_chars(call.req), deps.config.max_prompt_tokens)
    try:
        call.prompt = deps.build_prompt(deps.fmt, call.req.messages, call.req.tools, list(call.session.turns))
    except RequestError:
        raise
    except Exception as e:  # template errors (jinja raise_exception, bad tool schema)
        raise RequestError(f"cannot render this conversation: {type(e).__name__}: {e}") from None
    n = len(call.prompt.ids)
    limits.check_prompt_length(call.dialect, n, deps.context_length, deps.config.max_prompt_tokens)
    call.max_tokens, note = limits.output_cap(
        call.req.max_tokens, deps.sampling.max_tokens, deps.context_length, n
    )
    if note is not None:
        call.notes.append(note)
        call.tags.append("max_tokens_lowered")


async def prepare(
    deps: ProxyDeps, dialect: Dialect, session: Session, headers: Mapping[str, str], raw: bytes
) -> Call:
    """Stages parse, validate and prompt; in a worker thread for a large body. A prompt too long for
    the context is recorded on the session as a failed call (tagged `context_overflow`), then raised."""

    def work() -> Call:
        req, images = parse_request(deps, dialect, raw, headers.get("content-type", ""))
        call = Call(deps, dialect, session, headers, raw, req, replaced_images=images)
        if images:
            call.notes.append(f"replaced {images} image part(s) with a text placeholder")
            call.tags.append("images_replaced")
        try:
            prompt_stage(call)
        except limits.ContextOverflow as e:
            call.overflow = e
        return call

    call = await in_thread(deps, raw, work)
    if call.overflow is not None:
        record_overflow(call, call.overflow)
        raise call.overflow
    return call


async def in_thread(deps: ProxyDeps, raw: bytes, work: Callable[[], T]) -> T:
    """`work()` (parse, render, tokenize `raw`): here for a small body, in a worker thread from
    LARGE_BODY bytes, and from `limits.HEAVY_CHARS` bytes only while fewer than `deps.heavy` other
    heavy bodies are being prepared (their tokenizing is what costs memory; a body's bytes bound
    its characters)."""
    if len(raw) < LARGE_BODY:
        return work()
    if len(raw) < limits.HEAVY_CHARS:
        return await asyncio.to_thread(work)
    async with deps.heavy:
        return await asyncio.to_thread(work)


def sampling_for(call: Call) -> SamplingParams:
    cfg = call.deps.sampling
    return SamplingParams(
        temperature=cfg.temperature,
        top_p=cfg.top_p,
        max_tokens=call.max_tokens,
        stop_token_ids=tuple(call.deps.fmt.stop_token_ids),
        seed=None if call.session.seed is None else (call.session.seed + call.index) % 2**63,
    )


# -- generate ------------------------------------------------------------------------------------------


def start(call: Call) -> asyncio.Task[CallOutcome]:
    """Stage session + generate: claim the call index, find a retry's original, start the task."""
    call.index = call.session.claim_index()
    call.response_id = new_id(call.dialect.response_id_prefix)
    call.request_digest = capture.digest(call.raw)
    earlier = call.session.by_digest.get(call.request_digest)
    retries = capture.retry_count(call.headers)
    call.session.in_flight[call.call_id] = lambda: in_flight_record(call)
    if earlier is not None and (retries is None or retries > 0):
        return asyncio.ensure_future(_replay(call, earlier))
    task = asyncio.ensure_future(_generate(call))
    call.session.by_digest.setdefault(call.request_digest, task)
    return task


def in_flight_record(call: Call) -> ModelCall:
    """What a call still generating when its session closes is recorded as: partial, its prompt ids,
    no output (finish reason `abort`, tag `in_flight_at_close`). Not an engine error: the rollout
    ended first (a timeout, or the runner stopped it)."""
    call.partial = True
    call.tags.append("in_flight_at_close")
    record = _model_call(call, CallOutcome(None, None, call.call_id))
    record.finish_reason = "abort"
    return record


async def _generate(call: Call) -> CallOutcome:
    assert call.prompt is not None
    try:
        result = await call.deps.engine.generate(call.prompt.ids, sampling_for(call))
        completion, message, parsed = completion_from(call, result)
    except Exception as e:  # engine faults are data: this call fails, the server keeps serving
        log.exception("engine failed on call %s", call.call_id)
        outcome = CallOutcome(None, None, call.call_id, error=f"{type(e).__name__}: {e}")
    else:
        malformed = bool(parsed.malformed)
        outcome = CallOutcome(completion, result, call.call_id, message=message, malformed=malformed)
    record_stage(call, outcome)
    return outcome


async def _replay(call: Call, earlier: asyncio.Future[Any]) -> CallOutcome:
    """Answer a retry with the earlier call's output (no new sampling), or generate if that one failed."""
    first: CallOutcome = await asyncio.shield(earlier)
    if first.error is not None or first.completion is None:
        return await _generate(call)
    completion = dataclasses.replace(first.completion, response_id=call.response_id)
    outcome = CallOutcome(completion, first.result, first.sampled_by, replay_of=first.sampled_by)
    record_stage(call, outcome)
    return outcome


def completion_from(call: Call, result: GenerationResult) -> tuple[Completion, ChatMessage, ParsedLike]:
    """Parse the output ids into text, reasoning and tool calls (with this dialect's call ids), keep
    the calls `limits.decide_tool_calls` lets through; also return the assistant message the splicer
    remembers (the calls sent, not the ones dropped) and the chat format's own parse."""
    parsed = call.deps.fmt.parse(result.output_ids)
    decision = limits.decide_tool_calls(call.req, parsed.tool_calls)
    call.notes += decision.notes
    call.tags += decision.tags
    message = parsed.message()
    message.tool_calls = [message.tool_calls[i] for i in decision.kept]
    custom = set(call.req.options.get("custom_tools", ()))
    prefix = call.dialect.tool_id_prefix
    calls = [_wire_tool_call(parsed.tool_calls[i], prefix, custom) for i in decision.kept]
    assert call.prompt is not None
    logprobs = None
    if call.req.logprobs:
        logprobs = list(
            zip(call.deps.fmt.token_texts(result.output_ids), result.output_logprobs, strict=True)
        )
    completion = Completion(
        response_id=call.response_id,
        model=call.req.model or call.deps.model_name,
        text=parsed.text,
        reasoning=parsed.reasoning,
        tool_calls=calls,
        finish_reason=result.finish_reason,
        prompt_tokens=len(call.prompt.ids),
        output_tokens=len(result.output_ids),
        created=int(time.time()),
        logprobs=logprobs,
    )
    return completion, message, parsed


def _wire_tool_call(tc: ToolCall, prefix: str, custom: set[str]) -> ToolCall:
    if tc.name in custom:
        text = tc.arguments.get("input")
        args = {"input": text if isinstance(text, str) else json.dumps(tc.arguments)}
        return ToolCall(id=new_id(prefix), name=tc.name, arguments=args, type="custom")
    return ToolCall(id=new_id(prefix), name=tc.name, arguments=tc.arguments, type=tc.type)


# -- record ----------------------------------------------------------------------------------------------


def record_overflow(call: Call, error: limits.ContextOverflow) -> None:
    """Record a call refused for its length as failed (no output), so the rollout says why."""
    call.index = call.session.claim_index()
    call.request_digest = capture.digest(call.raw)
    call.tags.append("context_overflow")
    record_stage(call, CallOutcome(None, None, call.call_id, error=f"context_overflow: {error.message}"))


def record_stage(call: Call, outcome: CallOutcome) -> None:
    """Append the ModelCall (and, for fresh generations, the splice Turn). Never raises; a call that
    could not be recorded is counted on the session (`Session.dropped`)."""
    recorded = False
    call.session.in_flight.pop(call.call_id, None)
    try:
        call.recorded = _model_call(call, outcome)
        call.session.record(call.recorded)
        recorded = True
        prompt, result, output = call.prompt, outcome.result, outcome.message
        if outcome.replay_of is None and prompt is not None and result is not None and output is not None:
            turn = call.deps.make_turn(
                call_id=call.call_id,
                messages=call.req.messages if prompt.messages is None else prompt.messages,
                tools=call.req.tools if prompt.tools is None else prompt.tools,
                prompt_ids=call.recorded.prompt_ids,  # the tuple the session holds (`held_ids`)
                output_ids=result.output_ids,
                output=output,
            )
            call.session.turns.append(turn)
    except Exception:
        if not recorded:
            call.session.dropped += 1
        log.exception("recording call %s failed; serving continues", call.call_id)


def _model_call(call: Call, outcome: CallOutcome) -> ModelCall:
    req, prompt, result, c = call.req, call.prompt, outcome.result, outcome.completion
    tags = ["stream"] if req.stream else []
    if capture.is_compaction_request(req.messages):
        tags.append("compaction_request")
    if outcome.replay_of is not None:
        tags.append("retry_replay")
    if outcome.malformed:
        tags.append("malformed_output")
    tags += call.tags
    return ModelCall.model_construct(  # hot path: fields are already typed; skip validation
        call_id=call.call_id,
        rollout_id=call.session.rollout_id,
        index=call.index,
        dialect=call.dialect.name,
        requested_model=req.model,
        # a tuple while the session is open (`sessions.held_ids`); `sessions.released` makes it a list
        prompt_ids=cast(list[int], held_ids(prompt.ids if prompt is not None else ())),
        output_ids=result.output_ids if result is not None else [],
        output_logprobs=result.output_logprobs if result is not None else [],
        finish_reason=c.finish_reason if c is not None else "error",
        render=prompt.render if prompt is not None else "rendered",
        spliced_from=prompt.spliced_from if prompt is not None else None,
        system_digest=capture.system_digest(req.messages),
        tools_digest=capture.tools_digest(req.tools),
        tool_names=[t.name for t in req.tools],
        request_digest=call.request_digest,
        replay_of=outcome.replay_of,
        headers=capture.headers_of_interest(call.headers),
        text=c.text if c is not None else "",
        reasoning=c.reasoning if c is not None else None,
        tool_calls=c.tool_calls if c is not None else [],
        tags=tags,
        started_at=call.started_at,
        finished_at=time.time(),
        partial=call.partial,
        error=outcome.error,
        notes=list(call.notes),
        replaced_images=call.replaced_images,
        model_id=call.deps.model_id,
        tokenizer=call.deps.tokenizer,
        tokenizer_digest=call.deps.tokenizer_digest,
        weights_version=_weights_version(call, result),
    )


def _weights_version(call: Call, result: GenerationResult | None) -> int | None:
    """The version the output was sampled with (the result's `meta`), else the engine's now; None if
    nothing was sampled or the engine keeps no version."""
    if result is None:
        return None
    version = result.meta.get("weights_version", getattr(call.deps.engine, "weights_version", None))
    return version if isinstance(version, int) else None


def mark_partial(call: Call) -> None:
    """The response was not delivered in full (client went away)."""
    if call.partial:
        return
    call.partial = True
    if call.recorded is not None:
        call.recorded.partial = True
        call.session.updated(call.recorded)
