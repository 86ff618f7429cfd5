"""The ASGI app: routing, sessions, and turning stage results into HTTP responses.

    app = make_app(deps)     # deps: ProxyDeps (engine, chat format, session store, config)

Routes come from the dialect registry (`dialects.resolve`: path, query and headers -> `Endpoint`);
nothing here depends on which dialect answers, and every error is in the shape of the API whose path
it is (`dialects.owner` for a path no route serves).

Routes, each also under `/r/<token>`: `POST /v1/messages` (+ `?beta=true`), `POST /v1/messages/count_tokens`,
`POST /v1/chat/completions`, `POST /v1/responses`, `POST /v1beta/models/<model>:generateContent` (also
`:streamGenerateContent`, `:countTokens`, and under `/v1/models/`); the model lists `GET /v1/models[/<id>]`
(OpenAI's, Anthropic's or Google's shape, by the client that asks) and `GET /v1beta/models[/<id>]`; plus
`GET /` and `HEAD /` probes. Every route but that health probe needs a live session: the `/r/<token>`
prefix, else the API key (`x-api-key`, `Authorization: Bearer`, `x-goog-api-key` or `?key=`) as a token,
else (open mode only) the default session; otherwise 401. A proxy that listens beyond loopback (Ray
workers on other machines) so answers nobody without a rollout's token but the probe.
Order of checks: route (404) -> method (405) -> session (401) -> body size, after gzip/deflate decoding
(413) -> JSON (400, `body.py`: also nesting deeper than 256, integers past 4,300 digits, lone
surrogates) -> fields (400) -> prompt length (400 in the API's "prompt is too long" shape, before any
stream header).

A client that goes away (while sending its body, while its turn is generated, or mid-stream) is one
debug line, never an error: the call is marked `partial` (generation goes on, so its retry is
replayed, not re-sampled).

Streaming: a turn that is done within one keep-alive interval is sent as one complete SSE body (with
Content-Length); a slower one is streamed: the API's head events (or a keep-alive), keep-alives every
`keepalive_s`, then the rest of the events.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Mapping
from typing import Any

from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from harnessrl.proxy import limits, sse
from harnessrl.proxy.body import read_body
from harnessrl.proxy.deps import ProxyDeps
from harnessrl.proxy.dialects import owner, resolve
from harnessrl.proxy.dialects.base import Dialect, Endpoint
from harnessrl.proxy.handler import Call, CallOutcome, in_thread, mark_partial, parse_request, prepare, start
from harnessrl.proxy.sessions import Session
from harnessrl.types import RequestError

log = logging.getLogger(__name__)

_SSE_HEADERS = {"cache-control": "no-cache", "x-accel-buffering": "no"}


def json_response(body: Any, status: int = 200, headers: Mapping[str, str] | None = None) -> Response:
    data = sse.dumps(body).encode()
    return Response(data, status_code=status, media_type="application/json", headers=headers)


def error_response(
    dialect: Dialect, status: int, message: str, headers: Mapping[str, str] | None = None
) -> Response:
    """An error in `dialect`'s shape."""
    return json_response(dialect.error_json(status, message), status, headers)


def split_path(path: str) -> tuple[str | None, str]:
    """`/r/<token>/v1/x` -> (token, `/v1/x`); `/v1/x` -> (None, `/v1/x`)."""
    if path.startswith("/r/"):
        token, _, rest = path[3:].partition("/")
        return token, "/" + rest
    return None, path


def header_dict(request: Request) -> dict[str, str]:
    """The request headers as a plain dict (names lower-cased by the server; the first of repeated
    headers wins, as `request.headers.get` has it). Built once per request: starlette's `Headers`
    decodes and scans the whole list on every lookup, and capture looks up a dozen names."""
    out: dict[str, str] = {}
    for name, value in request.scope["headers"]:
        out.setdefault(name.decode("latin-1"), value.decode("latin-1"))
    return out


def api_key(headers: Mapping[str, str]) -> str | None:
    key = headers.get("x-api-key")
    if key:
        return key
    auth = headers.get("authorization", "")
    scheme, _, value = auth.partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip()
    return headers.get("x-goog-api-key") or None


class ProxyApp:
    """Holds the deps; one method per kind of route."""

    def __init__(self, deps: ProxyDeps) -> None:
        self.deps = deps

    async def dispatch(self, request: Request) -> Response:
        """Stages route (404) -> method (405) -> session (401) -> the route's work; every error in the
        shape of the API the path belongs to."""
        scope = request.scope
        token, route = split_path(scope.get("root_path", "") + scope["path"])  # = request.url.path
        query: bytes = scope.get("query_string", b"")
        headers = header_dict(request)
        endpoint = resolve(route, query, headers)
        if endpoint is None:
            return self.no_route(request.method, route, token, headers, query)
        dialect = endpoint.dialect
        if request.method not in endpoint.methods:
            allowed = ", ".join(endpoint.methods)
            return error_response(dialect, 405, f"{route} takes {allowed}", headers={"allow": allowed})
        session = self.resolve(token, headers, endpoint.api_key)
        if session is None:
            return error_response(dialect, 401, "unknown session token or API key")
        if endpoint.model is not None:
            return self.models(dialect, endpoint.model)
        try:
            return await self.model_call(request, headers, endpoint, session)
        except RequestError as e:
            close = {"connection": "close"} if e.status == 408 else None  # the rest of its body is not read
            return json_response(dialect.error_json(e.status, e.message, e.param, e.code), e.status, close)
        except ClientDisconnect:  # before the body was complete: nothing to answer, nothing to record
            log.debug("client went away while sending its request to %s", route)
            return Response(status_code=499)
        except Exception as e:  # a bug; still answer in the API's shape and keep serving
            log.exception("unhandled error on %s", route)
            return error_response(dialect, 500, f"internal error: {type(e).__name__}")

    def no_route(
        self, method: str, route: str, token: str | None, headers: Mapping[str, str], query: bytes
    ) -> Response:
        """The health probe (`GET /`, `HEAD /`: open, but a prefix must name a live session), else a 404
        in the shape of the API whose path it is (`dialects.owner`)."""
        dialect = owner(route, headers, query)
        if route in ("/", ""):
            if token is not None and self.deps.sessions.by_path_token(token) is None:
                return error_response(dialect, 401, "unknown session token")
            return json_response({"status": "ok"})
        return error_response(dialect, 404, f"no route {method} {route}")

    def resolve(
        self, token: str | None, headers: Mapping[str, str], key: str | None = None
    ) -> Session | None:
        sessions = self.deps.sessions
        if token is not None:
            return sessions.by_path_token(token)
        return sessions.by_api_key(key or api_key(headers))

    def models(self, dialect: Dialect, name: str) -> Response:
        """`GET <models path>` (the model the server is named after) or `GET <models path>/<name>` (any
        name: a harness may ask for the one it was configured with, and every name is served by the
        one policy), in the shape of the API asked (`dialects.resolve`)."""
        context = self.deps.context_length
        if name:
            return json_response(dialect.model_json(name, context))
        return json_response(dialect.models_json([self.deps.model_name], context))

    async def model_call(
        self,
        request: Request,
        headers: Mapping[str, str],
        endpoint: Endpoint,
        session: Session,
    ) -> Response:
        raw = await read_body(
            request, headers, self.deps.config.max_body_bytes, self.deps.config.body_timeout_s
        )
        dialect = endpoint.dialect
        if endpoint.count_tokens is not None:
            return json_response(endpoint.count_tokens(await self.count_tokens(dialect, raw, headers)))
        budget = self.deps.config.max_rollout_tokens
        if budget is not None and session.recorded_tokens >= budget:
            held = f"this rollout's {len(session.calls)} recorded calls hold {session.recorded_tokens} tokens"
            raise RequestError(f"{held} (proxy.max_rollout_tokens is {budget}): no further calls")
        limit = self.deps.config.max_calls_in_flight
        if limit is not None and len(session.in_flight) >= limit:
            busy = f"{len(session.in_flight)} calls of this rollout are generating"
            raise RequestError(f"{busy} (proxy.max_calls_in_flight); retry when one has finished", status=429)
        call = await prepare(self.deps, dialect, session, headers, raw)
        req = call.req
        task = start(call)
        if req.stream:
            # A turn done within one keep-alive interval goes out as one complete SSE body (fewer
            # writes, no streaming machinery); otherwise stream: head now, keep-alives, then the events.
            # One bare yield first: a generation that needs no I/O finishes in that same loop turn,
            # without a timer and a waiter future.
            await asyncio.sleep(0)
            if not task.done():
                await asyncio.wait({task}, timeout=self.deps.config.keepalive_s)
            if task.done():
                assert call.prompt is not None
                head = dialect.stream_head(req, call.response_id, len(call.prompt.ids))
                body_bytes = b"".join(head + self.final_events(call, task.result()))
                return Response(body_bytes, media_type=dialect.stream_media_type, headers=_SSE_HEADERS)
            return StreamingResponse(
                self.stream(call, task), media_type=dialect.stream_media_type, headers=_SSE_HEADERS
            )
        if not await self.until_done_or_gone(request, task):
            mark_partial(call)  # the client went away: generation goes on, a retry can replay it
            log.debug("client went away while call %s was generated", call.call_id)
            return Response(status_code=499)
        outcome = task.result()
        if outcome.completion is None:
            return json_response(dialect.error_json(500, f"engine error: {outcome.error}"), 500)
        return json_response(dialect.response_json(req, outcome.completion))

    async def count_tokens(self, dialect: Dialect, raw: bytes, headers: Mapping[str, str]) -> int:
        def work() -> int:
            req, _ = parse_request(self.deps, dialect, raw, headers.get("content-type", ""))
            limits.check_prompt_chars(dialect, limits.request_chars(req), self.deps.config.max_prompt_tokens)
            try:
                return self.deps.fmt.count_tokens(req.messages, req.tools)
            except Exception as e:
                raise RequestError(f"cannot render this conversation: {type(e).__name__}: {e}") from None

        return await in_thread(self.deps, raw, work)

    @staticmethod
    async def until_done_or_gone(request: Request, task: asyncio.Task[CallOutcome]) -> bool:
        """Wait for a non-streaming call's generation; False as soon as the client disconnects (the
        body has been read, so the next ASGI message is `http.disconnect`)."""
        await asyncio.sleep(0)
        if task.done():
            return True
        gone = asyncio.ensure_future(_disconnected(request))
        try:
            await asyncio.wait({task, gone}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            gone.cancel()
        return task.done()

    def final_events(self, call: Call, outcome: CallOutcome) -> list[bytes]:
        """The events after the head: the whole turn, or an error event in the API's shape."""
        if outcome.completion is None:
            message = f"engine error: {outcome.error}"
            return call.dialect.stream_error(call.req, call.response_id, 500, message)
        return call.dialect.stream_events(call.req, outcome.completion)

    async def stream(self, call: Call, task: asyncio.Task[CallOutcome]) -> AsyncIterator[bytes]:
        """Stage format (streaming, slow turns): head, keep-alives while generating, then the events.
        A client that goes away before the last chunk leaves its call marked `partial`."""
        dialect, delivered = call.dialect, False
        try:
            assert call.prompt is not None
            head = dialect.stream_head(call.req, call.response_id, len(call.prompt.ids))
            yield b"".join(head) if head else dialect.keepalive
            while not task.done():
                done, _ = await asyncio.wait({task}, timeout=self.deps.config.keepalive_s)
                if not done:
                    yield dialect.keepalive
            yield b"".join(self.final_events(call, task.result()))
            delivered = True
        finally:
            if not delivered:
                mark_partial(call)
                log.debug("client went away while call %s was streamed", call.call_id)


async def _disconnected(request: Request) -> None:
    """Return once the client has disconnected."""
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            return


def make_app(deps: ProxyDeps) -> Starlette:
    """The proxy as an ASGI app (run it with uvicorn)."""
    proxy = ProxyApp(deps)
    methods = ["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"]  # all: 405s in the API's shape
    app = Starlette(routes=[Route("/{path:path}", proxy.dispatch, methods=methods)])
    app.state.proxy = proxy
    return app
