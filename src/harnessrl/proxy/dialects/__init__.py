"""The model APIs the proxy speaks, one module each, in an explicit registry keyed by name.

Adding a dialect: write its module (a class with the members of `base.Dialect`) and add one line to
DIALECTS. Its routes reach the app through `resolve`: fixed paths by one dict lookup, paths with
parameters (Gemini's `{model}`) through the dialect's own `match`, tried only when no fixed path hits,
then the model lists (`models_paths`). A path no route serves is a 404 in the shape of `owner`.

Several APIs list their models at one path (`/v1/models`: OpenAI, Anthropic, Google's SDKs given a
base URL). Such a request is answered by the API whose client sent it (`Dialect.recognises`: a header
only its SDKs send), else by FALLBACK.
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import parse_qs, unquote

from harnessrl.proxy.dialects.anthropic import AnthropicDialect
from harnessrl.proxy.dialects.base import Dialect, Endpoint
from harnessrl.proxy.dialects.gemini import GeminiDialect
from harnessrl.proxy.dialects.openai_chat import OpenAIChatDialect
from harnessrl.proxy.dialects.openai_responses import OpenAIResponsesDialect

DIALECTS: dict[str, Dialect] = {
    "anthropic": AnthropicDialect(),
    "openai_chat": OpenAIChatDialect(),
    "openai_responses": OpenAIResponsesDialect(),
    "gemini": GeminiDialect(),
}
"""Name (ModelCall.dialect) -> dialect."""
FALLBACK = DIALECTS["openai_chat"]
"""Answers what no API claims by path or client (an unknown path, a model list asked without any
client's header): OpenAI's shapes, the ones OpenAI-compatible clients (the most common kind) read."""

ROUTES: dict[str, Endpoint] = {
    path: endpoint for dialect in DIALECTS.values() for path, endpoint in dialect.endpoints().items()
}
"""Fixed route (after the optional `/r/<token>` prefix) -> endpoint."""
_MATCHERS = [d for d in DIALECTS.values() if any("{" in route for route in d.routes)]
MODELS: dict[str, list[Dialect]] = {}
"""Model-list path -> the dialects that list models there, in registry order."""
for _dialect in DIALECTS.values():
    for _path in _dialect.models_paths:
        MODELS.setdefault(_path, []).append(_dialect)
_NO_HEADERS: Mapping[str, str] = {}


def resolve(route: str, query: bytes = b"", headers: Mapping[str, str] = _NO_HEADERS) -> Endpoint | None:
    """The endpoint a request path (and its raw query string and headers) names, or None (a 404)."""
    endpoint = ROUTES.get(route.rstrip("/"))
    if endpoint is not None:
        return endpoint
    for dialect in _MATCHERS:
        endpoint = dialect.match(route, query)
        if endpoint is not None:
            return endpoint
    return _lookup(route, query, headers)


def _lookup(route: str, query: bytes, headers: Mapping[str, str]) -> Endpoint | None:
    """`<models path>` (the list) or `<models path>/<name>` (one model), with the key a `?key=` query
    carries (as for Gemini's calls); None for anything else, and for `<name>:<method>` on a path an API
    owns (Google's `:embedContent`: not served)."""
    route = route.rstrip("/")
    for path, dialects in MODELS.items():
        if route != path and not route.startswith(path + "/"):
            continue
        name = unquote(route[len(path) + 1 :])
        if "/" in name or (":" in name and any(d.owns(route) for d in DIALECTS.values())):
            return None
        key = parse_qs(query.decode("latin-1")).get("key", [None])[0] if b"key=" in query else None
        return Endpoint(speaker(dialects, headers, query), api_key=key, model=name)
    return None


def speaker(dialects: list[Dialect], headers: Mapping[str, str], query: bytes) -> Dialect:
    """Of the dialects that could answer, the one whose client sent the request; else FALLBACK if it is
    one of them; else the first."""
    for dialect in dialects:
        if dialect.recognises(headers, query):
            return dialect
    return FALLBACK if FALLBACK in dialects else dialects[0]


def owner(route: str, headers: Mapping[str, str] = _NO_HEADERS, query: bytes = b"") -> Dialect:
    """The API whose error shape a request to a path that no route serves gets: the one that owns the
    path, else the one whose client sent it, else FALLBACK."""
    for dialect in DIALECTS.values():
        if dialect.owns(route):
            return dialect
    return speaker(list(DIALECTS.values()), headers, query)


__all__ = [
    "DIALECTS",
    "FALLBACK",
    "MODELS",
    "ROUTES",
    "AnthropicDialect",
    "Dialect",
    "Endpoint",
    "GeminiDialect",
    "OpenAIChatDialect",
    "OpenAIResponsesDialect",
    "owner",
    "resolve",
    "speaker",
]
