"""The Dialect protocol: everything the proxy needs from one model API: its routes, the paths it owns
(whose 404s and 401s are in its error shape), how its clients show themselves on a path several APIs
share (`/v1/models`), its model list, parsing a request, counting its images, formatting a response,
its ids, keep-alives, errors and "prompt is too long" wording. The app, the handler and `limits` never
branch on a dialect's name; adding a dialect is its module plus one line in `dialects/__init__.py`.

A dialect is stateless (or bound to one request's path, as Gemini's is by `match`); the handler owns
timing (keep-alives) and the order head -> keep-alives -> events. `stream_head` is what may go out
before the turn is generated (Anthropic's message_start; the OpenAI dialects send nothing early so that
an engine error can still become a proper error event).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from harnessrl.proxy.canonical import CanonicalRequest, Completion


@dataclass(frozen=True)
class Endpoint:
    """What one route means: the dialect that answers it, whether it counts tokens or looks a model
    up, and an API key the path or query carried (Gemini's `?key=`)."""

    dialect: Dialect
    count_tokens: Callable[[int], dict[str, Any]] | None = None
    """For a token-counting route: prompt tokens -> this API's response body. None: a model call."""
    api_key: str | None = None
    model: str | None = None
    """For a model lookup (`GET /v1/models/<name>`): the name asked, "" for the list. None: a POST."""

    @property
    def methods(self) -> tuple[str, ...]:
        """The HTTP methods the route takes (any other is a 405 in the dialect's shape)."""
        return ("GET", "HEAD") if self.model is not None else ("POST",)


@runtime_checkable
class Dialect(Protocol):
    name: str
    """anthropic | openai_chat | openai_responses | gemini (ModelCall.dialect)."""
    routes: tuple[str, ...]
    """The paths this API serves (after the optional `/r/<token>`); a `{name}` part is matched by
    `match`, the others are looked up exactly."""
    tool_id_prefix: str
    """Prefix of the tool-call ids this API uses (`toolu_`, `call_`)."""
    response_id_prefix: str
    """Prefix of its response ids (`msg_`, `chatcmpl-`, `resp_`; Gemini's have none)."""
    keepalive: bytes
    """SSE bytes sent while the turn is generated."""
    stream_media_type: str
    """Content type of a streamed response (`text/event-stream`; Gemini's JSON-array stream: JSON)."""
    models_paths: tuple[str, ...]
    """Where this API lists its models (`/v1/models`); `<path>/<name>` looks one up; () for none. A
    path several APIs list models at is answered by the one whose client sent the request
    (`recognises`), else by the registry's fallback."""

    def owns(self, route: str) -> bool:
        """Whether a path is in this API's namespace, served or not (`/v1/messages/batches`,
        `/v1beta/...`): a 404 or 401 there is in this API's error shape."""
        ...

    def recognises(self, headers: Mapping[str, str], query: bytes) -> bool:
        """Whether a request shows that one of this API's clients sent it (a header only its SDKs
        send); decides the answer's shape on a path several APIs share."""
        ...

    def count_images(self, raw: bytes, body: dict[str, Any]) -> int:
        """Image parts in a request body (`raw` its bytes, for a quick scan first): each becomes
        `canonical.IMAGE_PLACEHOLDER` in `parse` (or a 400 with `proxy.images = "reject"`)."""
        ...

    def model_json(self, name: str, context_length: int | None) -> dict[str, Any]:
        """One model as this API describes it (`GET <models path>/<name>`)."""
        ...

    def models_json(self, names: list[str], context_length: int | None) -> dict[str, Any]:
        """This API's model list (`GET <models path>`)."""
        ...

    def endpoints(self) -> dict[str, Endpoint]:
        """The fixed routes (those of `routes` without a `{name}` part) -> their endpoints."""
        ...

    def match(self, route: str, query: bytes) -> Endpoint | None:
        """A route with path parameters (Gemini's `/v1beta/models/{model}:generateContent`) -> its
        endpoint; None if it is not one of this API's (always None for fixed routes only)."""
        ...

    def parse(self, body: dict[str, Any]) -> CanonicalRequest:
        """Wire request -> canonical request; raises RequestError (a 400 naming the field)."""
        ...

    def response_json(self, req: CanonicalRequest, c: Completion) -> dict[str, Any]:
        """The non-streaming response body."""
        ...

    def stream_head(self, req: CanonicalRequest, response_id: str, prompt_tokens: int) -> list[bytes]:
        """Events that may be sent before generation finishes."""
        ...

    def stream_events(self, req: CanonicalRequest, c: Completion) -> list[bytes]:
        """The rest of the stream, in order, through its terminal event."""
        ...

    def error_json(
        self, status: int, message: str, param: str | None = None, code: str | None = None
    ) -> dict[str, Any]:
        """This API's error body."""
        ...

    def stream_error(self, req: CanonicalRequest, response_id: str, status: int, message: str) -> list[bytes]:
        """Terminal events reporting an error after the stream has started."""
        ...

    def overflow(self, prompt_tokens: int, limit: int, what: str) -> tuple[str, str | None, str | None]:
        """This API's "prompt is too long" 400 as (message, param, code); `what` says which bound it
        hit, and the message ends with `canonical.fit_advice` (how to make it fit)."""
        ...
