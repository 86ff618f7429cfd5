"""The ASGI app: routing, sessions, body limits, and turning stage results into HTTP responses.

    app = make_app(deps)     # deps: ProxyDeps (engine, chat format, session store, config)

Model routes come from the dialect registry (`dialects.resolve`: path -> `Endpoint`); nothing here
depends on which dialect answers.

Routes, each also under `/r/<token>`: `POST /v1/messages` (+ `?beta=true`), `POST /v1/messages/count_tokens`,
`POST /v1/chat/completions`, `POST /v1/responses`, `POST /v1beta/models/<model>:generateContent` (also
`:streamGenerateContent`, `:countTokens`, and under `/v1/models/`), `GET /v1/models[/<id>]`; plus `GET /`
and `HEAD /` probes. Model routes need a session: the `/r/<token>` prefix, else the API key
(`x-api-key`, `Authorization: Bearer`, `x-goog-api-key` or `?key=`) as a token, else (open mode only)
the default session; otherwise 401.
Order of checks: route (404) -> session (401) -> body size, after gzip/deflate decoding (413) -> JSON
(400: also nesting deeper than 256 and integers too long to convert) -> fields (400) -> prompt length
(400 in the API's "prompt is too long" shape, before any stream header).

Non-streaming calls: a client that disconnects while its turn is generated leaves the call marked
`partial` (generation goes on, so its retry is replayed, not re-sampled).

Streaming: a turn that is done within one keep-alive interval is sent as one complete SSE body (with
Content-Length); a slower one is streamed: the API's head events (or a keep-alive), keep-alives every
`keepalive_s`, then the rest of the events.
"""

from __future__ import annotations

import asyncio
import logging
import zlib
from collections.abc import AsyncIterator, Mapping
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from harnessrl.proxy import sse
from harnessrl.proxy.deps import ProxyDeps
from harnessrl.proxy.dialects import resolve
from harnessrl.proxy.dialects.base import Dialect, Endpoint
from harnessrl.proxy.dialects.openai_chat import openai_error
from harnessrl.proxy.handler import LARGE_BODY, Call, Outcome, mark_partial, parse_request, prepare, start
from harnessrl.proxy.sessions import Session
from harnessrl.types import RequestError

log = logging.getLogger(__name__)

MODELS = "/v1/models"
_SSE_HEADERS = {"cache-control": "no-cache", "x-accel-buffering": "no"}


def json_response(body: Any, status: int = 200) -> Response:
    data = sse.dumps(body).encode()
    return Response(data, status_code=status, media_type="application/json")


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


async def read_body(request: Request, headers: Mapping[str, str], limit: int) -> bytes:
    """The body, or a 413 as soon as it is known to exceed `limit` bytes."""
    declared = headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise RequestError(f"request body exceeds {limit} bytes", status=413)
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise RequestError(f"request body exceeds {limit} bytes", status=413)
        chunks.append(chunk)
    return decode_body(b"".join(chunks), headers.get("content-encoding", ""), limit)


def decode_body(raw: bytes, encoding: str, limit: int) -> bytes:
    """Undo a `gzip` / `deflate` content-encoding, still within `limit` bytes (413 beyond it); other
    encodings (zstd, br) are a 400 naming the header."""
    encoding = encoding.strip().lower()
    if encoding in ("", "identity"):
        return raw
    if encoding not in ("gzip", "deflate"):
        raise RequestError(
            f"content-encoding {encoding!r} is not supported (gzip, deflate)", param="content-encoding"
        )
    inflater = zlib.decompressobj(wbits=47)  # 32 + 15: gzip or zlib header, detected
    try:
        out = inflater.decompress(raw, limit + 1)
    except zlib.error as e:
        raise RequestError(f"request body is not valid {encoding}: {e}", param="content-encoding") from None
    if len(out) > limit:
        raise RequestError(f"decoded request body exceeds {limit} bytes", status=413)
    return out


class ProxyApp:
    """Holds the deps; one method per kind of route."""

    def __init__(self, deps: ProxyDeps) -> None:
        self.deps = deps

    async def dispatch(self, request: Request) -> Response:
        scope = request.scope
        token, route = split_path(scope.get("root_path", "") + scope["path"])  # = request.url.path
        endpoint = resolve(route, scope.get("query_string", b""))
        if endpoint is None:
            if route in ("/", "", MODELS) or route.startswith(MODELS + "/"):
                if token is not None and self.deps.sessions.by_path_token(token) is None:
                    return json_response(openai_error(401, "unknown session token"), 401)
                if route in ("/", ""):
                    return json_response({"status": "ok"})
                return self.models(route.removeprefix(MODELS).strip("/"))
            return json_response(openai_error(404, f"no route {request.method} {route}"), 404)
        dialect = endpoint.dialect
        if request.method != "POST":
            return json_response(dialect.error_json(405, f"{route} takes POST"), 405)
        headers = header_dict(request)
        session = self.resolve(token, headers, endpoint.api_key)
        if session is None:
            return json_response(dialect.error_json(401, "unknown session token or API key"), 401)
        try:
            return await self.model_call(request, headers, endpoint, session)
        except RequestError as e:
            return json_response(dialect.error_json(e.status, e.message, e.param, e.code), e.status)
        except Exception as e:  # a bug; still answer in the API's shape and keep serving
            log.exception("unhandled error on %s", route)
            return json_response(dialect.error_json(500, f"internal error: {type(e).__name__}"), 500)

    def resolve(
        self, token: str | None, headers: Mapping[str, str], key: str | None = None
    ) -> Session | None:
        sessions = self.deps.sessions
        if token is not None:
            return sessions.by_path_token(token)
        return sessions.by_api_key(key or api_key(headers))

    def models(self, model_id: str) -> Response:
        """`GET /v1/models` (both APIs' list shapes merged) or `GET /v1/models/<id>` (any id: the harness
        may ask for the name it was configured with; every name is served by the one policy)."""
        name = model_id or self.deps.model_name
        entry = {"id": name, "object": "model", "created": 0, "owned_by": "harnessrl", "type": "model"}
        entry |= {"display_name": name, "created_at": "1970-01-01T00:00:00Z"}
        if model_id:
            return json_response(entry)
        return json_response(
            {"object": "list", "data": [entry], "has_more": False, "first_id": name, "last_id": name}
        )

    async def model_call(
        self,
        request: Request,
        headers: Mapping[str, str],
        endpoint: Endpoint,
        session: Session,
    ) -> Response:
        raw = await read_body(request, headers, self.deps.config.max_body_bytes)
        dialect = endpoint.dialect
        if endpoint.count_tokens is not None:
            return json_response(endpoint.count_tokens(await self.count_tokens(dialect, raw, headers)))
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
            return Response(status_code=499)
        outcome = task.result()
        if outcome.completion is None:
            return json_response(dialect.error_json(500, f"engine error: {outcome.error}"), 500)
        return json_response(dialect.response_json(req, outcome.completion))

    async def count_tokens(self, dialect: Dialect, raw: bytes, headers: Mapping[str, str]) -> int:
        def work() -> int:
            req, _ = parse_request(self.deps, dialect, raw, headers.get("content-type", ""))
            try:
                return self.deps.fmt.count_tokens(req.messages, req.tools)
            except Exception as e:
                raise RequestError(f"cannot render this conversation: {type(e).__name__}: {e}") from None

        return await asyncio.to_thread(work) if len(raw) >= LARGE_BODY else work()

    @staticmethod
    async def until_done_or_gone(request: Request, task: asyncio.Task[Outcome]) -> bool:
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

    def final_events(self, call: Call, outcome: Outcome) -> list[bytes]:
        """The events after the head: the whole turn, or an error event in the API's shape."""
        if outcome.completion is None:
            message = f"engine error: {outcome.error}"
            return call.dialect.stream_error(call.req, call.response_id, 500, message)
        return call.dialect.stream_events(call.req, outcome.completion)

    async def stream(self, call: Call, task: asyncio.Task[Outcome]) -> AsyncIterator[bytes]:
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


async def _disconnected(request: Request) -> None:
    """Return once the client has disconnected."""
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            return


def make_app(deps: ProxyDeps) -> Starlette:
    """The proxy as an ASGI app (run it with uvicorn)."""
    proxy = ProxyApp(deps)
    methods = ["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH"]
    app = Starlette(routes=[Route("/{path:path}", proxy.dispatch, methods=methods)])
    app.state.proxy = proxy
    return app
