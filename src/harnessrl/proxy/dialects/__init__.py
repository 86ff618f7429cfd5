"""The model APIs the proxy speaks, one module each, in an explicit registry keyed by route."""

from __future__ import annotations

from harnessrl.proxy.dialects.anthropic import AnthropicDialect
from harnessrl.proxy.dialects.base import Dialect
from harnessrl.proxy.dialects.gemini import GeminiDialect
from harnessrl.proxy.dialects.openai_chat import OpenAIChatDialect
from harnessrl.proxy.dialects.openai_responses import OpenAIResponsesDialect

DIALECTS: dict[str, Dialect] = {
    "/v1/messages": AnthropicDialect(),
    "/v1/chat/completions": OpenAIChatDialect(),
    "/v1/responses": OpenAIResponsesDialect(),
}
"""Route (after the optional `/r/<token>` prefix) -> dialect."""

__all__ = [
    "DIALECTS",
    "AnthropicDialect",
    "Dialect",
    "GeminiDialect",
    "OpenAIChatDialect",
    "OpenAIResponsesDialect",
]
