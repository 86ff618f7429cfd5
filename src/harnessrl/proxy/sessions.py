"""Per-rollout sessions: who a request belongs to, and the calls recorded for it.

The rollout runner calls `open(rollout_id)` and hands the harness `info.base_url` (Anthropic style,
the SDK appends `/v1/...`) or `info.openai_base_url` (ends in `/v1`); the same `info.token` also works
as the API key on bare `/v1/...` routes, for harnesses whose base URL cannot carry a path. A token maps
to exactly one session, so one rollout's token can never write into another rollout.

In "open" mode (`harnessrl serve`), requests on bare routes whose key is not a known token go to one
default session; a `/r/<token>/` prefix with an unknown token is still a 401.

With a capture directory (or a `journal` path given to `open`: a proxy process journals into the
rollout's own folder), each call is appended to `<capture_dir>/<rollout_id>/calls.jsonl` as soon
as it is recorded (one JSON line, flushed: a killed process leaves every recorded call on disk; a call
marked partial afterwards is appended again, and readers keep the last line per call_id).
`close(rollout_id)` forgets the token (later requests get 401) and rewrites that file in order, one
line per call. A call still in flight at close time (a rollout timed out, or was ended by the runner)
is recorded by `close` as a partial call (prompt ids, no output, finish reason `abort`, tag
`in_flight_at_close`); its generation, when it finishes later, goes to the closed session object
only and is logged as late. `close` also reports `dropped`: calls the proxy failed to record, so the
rollout runner never trains an incomplete rollout as complete.

`watch(rollout_id, fn)` calls `fn(call)` for every call recorded on an open session (the rollout
runner ends a rollout at its first `context_overflow` call this way).

While a session is open it holds each call's prompt ids as a tuple (`held_ids`), shared with the
splicer's Turn; what leaves the session has them as the list `ModelCall` declares: `calls` and the
journal get copies (`released`), `close` converts the session's own calls in place and returns them (so
a call marked partial after close, its client gone mid-stream, is marked in what close returned).
Watchers see the call as held (a tuple: they read tags; a copy per call cost ~0.1 ms). The reason is the
garbage collector: it walks every slot of every list at each full collection, and open sessions hold one
prompt-ids list per call (64 open 30-call Claude Code sessions: 54M slots, a 265 ms pause that every
call in flight waited out, the p99 of `benchmarks/proxy_traffic.py` at 64 sessions), while a tuple of
ints stops being tracked at its first collection.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harnessrl.formats.calls import append_call, write_calls
from harnessrl.types import ModelCall

log = logging.getLogger(__name__)


def held_ids(ids: Sequence[int]) -> tuple[int, ...]:
    """Prompt ids as an open session holds them (module docstring): a tuple, which the garbage
    collector stops tracking at its first collection (a list it walks at every full one)."""
    return ids if isinstance(ids, tuple) else tuple(ids)


def released(call: ModelCall) -> ModelCall:
    """`call` with its prompt ids as a list, as `ModelCall` declares them (a copy when they were held)."""
    if type(call.prompt_ids) is list:
        return call
    return call.model_copy(update={"prompt_ids": list(call.prompt_ids)})


@dataclass(frozen=True)
class SessionInfo:
    """What the rollout runner needs to point a harness at its session."""

    rollout_id: str
    token: str
    base_url: str
    """`http://host:port/r/<token>`: Anthropic-style base URL (the client adds `/v1/messages`)."""

    @property
    def openai_base_url(self) -> str:
        """OpenAI-style base URL (the client adds `/chat/completions` or `/responses`)."""
        return f"{self.base_url}/v1"


@dataclass
class Session:
    """The mutable state of one rollout's session. Only touched from the event loop thread."""

    rollout_id: str
    token: str
    calls: list[ModelCall] = field(default_factory=list)
    turns: list[Any] = field(default_factory=list)
    """`chat.tito.Turn` records, the splice history of `build_prompt`."""
    by_digest: dict[str, asyncio.Future[Any]] = field(default_factory=dict)
    """Request body digest -> the outcome of the first call with that body (retry replay)."""
    next_index: int = 0
    closed: bool = False
    dropped: int = 0
    """Calls that could not be recorded (the record stage failed): the rollout is incomplete."""
    seed: int | None = None
    """Sampling seed of this rollout: call i samples with `seed + i` (None = the engine's own draw)."""
    journal: Path | None = None
    """`<capture_dir>/<rollout_id>/calls.jsonl`: each call is appended (and flushed) as it is recorded."""
    in_flight: dict[str, Callable[[], ModelCall]] = field(default_factory=dict)
    """call_id -> how to record that call as partial, for calls generating right now (see `close`)."""
    watchers: list[Callable[[ModelCall], None]] = field(default_factory=list)
    """Called with every call recorded while the session is open (`SessionStore.watch`)."""
    recorded_tokens: int = 0
    """Prompt and output tokens of the calls recorded so far (`proxy.max_rollout_tokens`)."""

    def claim_index(self) -> int:
        """The next call index, in order of arrival."""
        index = self.next_index
        self.next_index += 1
        return index

    def record(self, call: ModelCall) -> None:
        if self.closed:
            log.warning(
                "call %s finished after session %s was closed; not flushed", call.call_id, self.rollout_id
            )
        self.in_flight.pop(call.call_id, None)
        self.calls.append(call)
        self.recorded_tokens += len(call.prompt_ids) + len(call.output_ids)
        self._journal(call)
        if not self.closed:
            for fn in self.watchers:
                try:
                    fn(call)
                except Exception:  # a watcher must never break recording
                    log.exception("session watcher failed on call %s", call.call_id)

    def updated(self, call: ModelCall) -> None:
        """A recorded call changed (marked partial): journal it again (readers keep the last line)."""
        self._journal(call)

    def _journal(self, call: ModelCall) -> None:
        if self.journal is not None and not self.closed:
            append_call(self.journal, call)  # the line is the same for held (tuple) prompt ids


def _check_rollout_id(rollout_id: str) -> None:
    if not rollout_id or rollout_id in (".", "..") or any(c in rollout_id for c in "/\\\x00"):
        raise ValueError(f"rollout id {rollout_id!r} must be a plain file name")


class SessionStore:
    """Token -> session, for every open rollout."""

    def __init__(self, capture_dir: str | Path | None = None, *, open_mode: bool = False) -> None:
        self.capture_dir = Path(capture_dir) if capture_dir is not None else None
        self.server_url = ""
        """Set by whoever starts the server (`http://127.0.0.1:PORT`); used to build base URLs."""
        self._by_token: dict[str, Session] = {}
        self._by_rollout: dict[str, Session] = {}
        self.default: Session | None = None
        if open_mode:
            self.default = self._new("default")

    def _new(self, rollout_id: str, journal: Path | None = None) -> Session:
        _check_rollout_id(rollout_id)
        if rollout_id in self._by_rollout:
            raise ValueError(f"rollout {rollout_id!r} already has an open session")
        session = Session(rollout_id=rollout_id, token=secrets.token_urlsafe(18))
        if journal is None and self.capture_dir is not None:
            journal = self.capture_dir / rollout_id / "calls.jsonl"
        if journal is not None:
            session.journal = journal
            journal.parent.mkdir(parents=True, exist_ok=True)
            journal.write_bytes(b"")
        self._by_token[session.token] = session
        self._by_rollout[rollout_id] = session
        return session

    def open(self, rollout_id: str, seed: int | None = None, journal: Path | None = None) -> SessionInfo:
        """Open a session for a rollout (`seed`: see `Session.seed`; `journal`: where its calls are
        appended, default `<capture_dir>/<rollout_id>/calls.jsonl` with a capture dir, else none).
        Raises ValueError if it is already open or the id is unsafe."""
        session = self._new(rollout_id, journal)
        session.seed = seed
        return SessionInfo(rollout_id, session.token, f"{self.server_url}/r/{session.token}")

    @property
    def open_count(self) -> int:
        """Sessions open now."""
        return len(self._by_rollout)

    def by_path_token(self, token: str) -> Session | None:
        """The session of a `/r/<token>/` prefix; unknown tokens have none, in every mode."""
        return self._by_token.get(token)

    def by_api_key(self, key: str | None) -> Session | None:
        """The session of an API key on a bare route (the default session in open mode)."""
        if key is not None and key in self._by_token:
            return self._by_token[key]
        return self.default

    def calls(self, rollout_id: str) -> list[ModelCall]:
        """The calls recorded so far, in order of arrival. KeyError if the rollout has no open session."""
        return sorted((released(c) for c in self._by_rollout[rollout_id].calls), key=lambda c: c.index)

    def dropped(self, rollout_id: str) -> int:
        """Calls of an open session that could not be recorded so far."""
        return self._by_rollout[rollout_id].dropped

    def watch(self, rollout_id: str, fn: Callable[[ModelCall], None]) -> None:
        """Call `fn(call)` for each call recorded on this open session from now on (KeyError if none).
        `fn` sees the call as the session holds it: prompt ids as a tuple (module docstring)."""
        self._by_rollout[rollout_id].watchers.append(fn)

    def close(self, rollout_id: str, *, rewrite: bool = True) -> RecordedCalls:
        """Close the session, record its calls still in flight as partial, rewrite its journal with its
        calls in order (one line per call, atomically; `rewrite=False`: leave the appended journal as
        it is, for a reader that keeps the last line per call and sorts), return them, with
        `.dropped` = calls it failed to record."""
        session = self._by_rollout.pop(rollout_id)
        self._by_token.pop(session.token, None)
        session.watchers.clear()
        for call_id, make in list(session.in_flight.items()):
            try:
                session.record(make())
            except Exception:
                session.dropped += 1
                log.exception("recording in-flight call %s at close failed", call_id)
        session.in_flight.clear()
        session.closed = True
        for c in session.calls:  # leaving the session: the declared list, on the same objects
            if type(c.prompt_ids) is not list:
                c.prompt_ids = list(c.prompt_ids)
        calls = RecordedCalls(sorted(session.calls, key=lambda c: c.index))
        calls.dropped = session.dropped
        if session.journal is not None and rewrite:
            tmp = session.journal.with_name(".calls.jsonl.tmp")
            write_calls(tmp, calls)
            os.replace(tmp, session.journal)
        return calls


class RecordedCalls(list[ModelCall]):
    """A closed session's calls in order of arrival, and how many it could not record."""

    dropped: int = 0
