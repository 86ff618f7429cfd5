"""One model call, in named stages: parse -> validate -> (session) -> prompt -> generate -> record -> format.

The HTTP layer (`app.py`) resolves the session and reads the body; everything from JSON decoding to the
response bytes is here. Generation runs in its own task, so that a client that goes away mid-stream does
not cancel it: the call is still recorded (marked `partial`) and a retry can replay it.

Failure handling, by stage: parse / validate / prompt raise `RequestError` (a 4xx in the dialect's shape;
a prompt too long for the context is also recorded as a failed call, tagged `context_overflow`); an
engine failure becomes an `CallOutcome` with an error (500 for that call only); the record stage catches
and logs everything (capture must never break serving) and counts what it lost on the session
(`Session.dropped`), so a rollout with a lost call is never trained as if complete.

Large requests (`LARGE_BODY` bytes and up) are decoded, parsed and rendered in a worker thread, so one
huge prompt does not stall the other sessions' calls on the event loop.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import re
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast

import orjson

from harnessrl.protocols import GenerationResult, SamplingParams
from harnessrl.proxy import capture, limits
from harnessrl.proxy.canonical import (
    CanonicalRequest,
    Completion,
    count_images,
    new_id,
    validate_messages,
)
from harnessrl.proxy.deps import ParsedLike, PromptLike, ProxyDeps
from harnessrl.proxy.dialects.base import Dialect
from harnessrl.proxy.sessions import Session, held_ids
from harnessrl.types import ChatMessage, ModelCall, RequestError, ToolCall

log = logging.getLogger(__name__)

LARGE_BODY = 256 * 1024
"""Bodies from this size on are parsed and rendered off the event loop (`prepare`)."""
MAX_JSON_DEPTH = 256
"""Deeper JSON nesting is a 400 (real requests nest < 20 deep; Python's parser recurses per level)."""


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


def parse_body(raw: bytes, content_type: str) -> dict[str, Any]:
    """Stage parse: JSON object bytes -> dict; wrong content type or malformed JSON is a 400."""
    if content_type and "json" not in content_type.lower():
        raise RequestError(
            f"content-type must be application/json, got {content_type!r}", param="content-type"
        )
    try:
        body = _loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise RequestError(f"request body is not valid JSON: {e}") from None
    except RecursionError:
        raise RequestError(f"request body nests deeper than {MAX_JSON_DEPTH} levels") from None
    except ValueError as e:  # e.g. an integer past sys.int_max_str_digits
        raise RequestError(f"request body cannot be decoded: {str(e)[:200]}") from None
    if not isinstance(body, dict):
        raise RequestError("request body must be a JSON object")
    check_depth(raw, body)
    check_surrogates(raw, body)
    return body


def _loads(raw: bytes) -> Any:
    """`json.loads(raw)`, through orjson when it can (2-3x faster on a Claude Code body of 50-180 KB,
    `benchmarks/proxy_traffic.py`). Where orjson refuses what `json` takes (NaN, integers past 64
    bits, UTF-16 text, an escaped lone surrogate, deeper than 1,024 levels) or fails, `json` decides,
    so what is accepted, what is decoded and every error message stay `json`'s. The one value orjson
    decodes differently, an integer past 64 bits (a float to orjson), needs a run of 19 digits: a
    body with one anywhere goes to `json` (found by a byte translation, ~0.05 ms on 150 KB, where a
    regex took 1.5 ms)."""
    if _NINETEEN_DIGITS in raw.translate(_DIGITS_TO_ZERO):
        return json.loads(raw)
    try:
        return orjson.loads(raw)
    except Exception:
        return json.loads(raw)


_DIGITS_TO_ZERO = bytes.maketrans(b"123456789", b"000000000")
_NINETEEN_DIGITS = b"0" * 19


_LONE_SURROGATE_ESCAPE = re.compile(
    rb"\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F])"  # a high half not followed by a low one
    rb"|(?<!\\u[dD][89abAB][0-9a-fA-F]{2})\\u[dD][c-fC-F][0-9a-fA-F]{2}"  # a low half alone
)


_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
"""Any escaped UTF-16 surrogate half, paired or not (what `_LONE_SURROGATE_ESCAPE` needs to match)."""


def check_surrogates(raw: bytes, body: Any) -> None:
    """A 400 when a string holds a lone UTF-16 surrogate (`"\\ud800"` alone is valid JSON but not
    Unicode text: it cannot be encoded, and recording such a request failed, which made its rollout
    lose a call). Only a body whose text shows an unpaired surrogate escape is encoded to check: an
    escaped pair (an emoji from a client that escapes non-ASCII) decodes to one character and costs
    nothing more. The pairing regex (lookarounds tried at every byte, ~13 ns a byte: 2.4 ms for a
    Claude Code body of 177 KB) runs only on a body that holds a surrogate escape at all (a literal-
    prefix scan, ~30x faster)."""
    if not _SURROGATE_ESCAPE.search(raw) or not _LONE_SURROGATE_ESCAPE.search(raw):
        return
    try:
        json.dumps(body, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as e:
        why = f"request body holds a lone UTF-16 surrogate ({e.reason}), not Unicode text"
        raise RequestError(why) from None


def check_depth(raw: bytes, body: Any, limit: int = MAX_JSON_DEPTH) -> None:
    """A 400 when the decoded body nests deeper than `limit` (deeper than ~1000 the parser itself
    fails, and that is a 400 too; in between, later stages would recurse past Python's limit). Only a
    body with more than `limit` opening brackets is walked, and only its containers."""
    if raw.count(b"[") + raw.count(b"{") <= limit:
        return
    level: list[Any] = [body]  # the containers at one depth, breadth first (no per-node tuples)
    for _ in range(limit):
        deeper: list[Any] = []
        for node in level:
            for c in node.values() if type(node) is dict else node:
                if type(c) is dict or type(c) is list:  # json.loads makes exactly these
                    deeper.append(c)
        if not deeper:
            return
        level = deeper
    raise RequestError(f"request body nests deeper than {limit} levels")


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
    body = parse_body(raw, content_type)
    images = (
        count_images(body.get("messages") or body.get("input")) if b'"image' in raw or b"_image" in raw else 0
    )
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
    chars = sum(len(m.content) + len(m.reasoning or "") for m in call.req.messages)
    limits.check_prompt_chars(call.dialect, chars, deps.config.max_prompt_tokens)
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

    call = await asyncio.to_thread(work) if len(raw) >= LARGE_BODY else work()
    if call.overflow is not None:
        record_overflow(call, call.overflow)
        raise call.overflow
    return call


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
