"""The model APIs the proxy speaks, one module each, in an explicit registry keyed by name.

Adding a dialect: write its module (a class with the members of `base.Dialect`) and add one line to
DIALECTS. Its routes reach the app through `resolve`: fixed paths by one dict lookup, paths with
parameters (Gemini's `{model}`) through the dialect's own `match`, tried only when no fixed path hits.
"""

from __future__ import annotations

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

ROUTES: dict[str, Endpoint] = {
    path: endpoint for dialect in DIALECTS.values() for path, endpoint in dialect.endpoints().items()
}
"""Fixed route (after the optional `/r/<token>` prefix) -> endpoint."""
_MATCHERS = [d for d in DIALECTS.values() if any("{" in route for route in d.routes)]


def resolve(route: str, query: bytes = b"") -> Endpoint | None:
    """The endpoint a request path (and its raw query string) names, or None (a 404)."""
    endpoint = ROUTES.get(route.rstrip("/"))
    if endpoint is not None:
        return endpoint
    for dialect in _MATCHERS:
        endpoint = dialect.match(route, query)
        if endpoint is not None:
            return endpoint
    return None


__all__ = [
    "DIALECTS",
    "ROUTES",
    "AnthropicDialect",
    "Dialect",
    "Endpoint",
    "GeminiDialect",
    "OpenAIChatDialect",
    "OpenAIResponsesDialect",
    "resolve",
]
