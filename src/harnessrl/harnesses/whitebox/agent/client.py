"""A streaming OpenAI Chat Completions client over urllib (the only way out of the sandbox)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any

Message = dict[str, Any]


class ModelError(Exception):
    """The endpoint refused or broke a call: the harness stops with an error."""


@dataclass
class Reply:
    """One assistant turn as streamed back."""

    text: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    """OpenAI shape: {"id", "type": "function", "function": {"name", "arguments": <JSON text>}}."""

    def message(self) -> Message:
        """The assistant message to put back into the history, exactly as received."""
        msg: Message = {"role": "assistant", "content": self.text}
        if self.tool_calls:
            msg["tool_calls"] = self.tool_calls
        return msg


def _merge(reply: Reply, delta: dict[str, Any]) -> None:
    reply.text += delta.get("content") or ""
    for part in delta.get("tool_calls") or []:
        i = part.get("index", len(reply.tool_calls))
        while len(reply.tool_calls) <= i:
            reply.tool_calls.append({"id": "", "type": "function", "function": {"name": "", "arguments": ""}})
        call = reply.tool_calls[i]
        call["id"] = part.get("id") or call["id"]
        fn = part.get("function") or {}
        call["function"]["name"] += fn.get("name") or ""
        call["function"]["arguments"] += fn.get("arguments") or ""


class Client:
    """POSTs `/v1/chat/completions` with `stream: true` and folds the SSE deltas into a Reply."""

    def __init__(self, base_url: str, api_key: str, model: str, max_tokens: int, timeout_s: float) -> None:
        self.url = base_url.rstrip("/") + "/v1/chat/completions"
        # The client never retries, so every request is a fresh one (`x-stainless-retry-count: 0`, the
        # SDKs' convention the proxy reads): without it the proxy took a request identical to an
        # earlier one for a retry and replayed the earlier answer, and a compaction that summarised a
        # step as before looped the rollout to its step limit on one sample (57 of 60 evaluations).
        self.headers = {
            "content-type": "application/json",
            "authorization": f"Bearer {api_key}",
            "x-stainless-retry-count": "0",
        }
        self.model, self.max_tokens, self.timeout_s = model, max_tokens, timeout_s
        self.calls = 0

    def chat(self, messages: list[Message], tools: list[dict[str, Any]] | None) -> Reply:
        body: dict[str, Any] = {"model": self.model, "messages": messages, "stream": True}
        body["max_tokens"] = self.max_tokens
        if tools:
            body["tools"] = tools
        req = urllib.request.Request(self.url, json.dumps(body).encode(), self.headers, method="POST")
        self.calls += 1
        reply = Reply()
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:
                for raw in resp:
                    line = raw.decode("utf-8", "replace").strip()
                    if not line.startswith("data:") or line == "data: [DONE]":
                        continue
                    chunk = json.loads(line[5:])
                    if "error" in chunk:
                        raise ModelError(f"stream error: {chunk['error']}")
                    for choice in chunk.get("choices") or []:
                        _merge(reply, choice.get("delta") or {})
        except urllib.error.HTTPError as e:
            raise ModelError(f"HTTP {e.code}: {e.read()[:500]!r}") from e
        except (urllib.error.URLError, OSError, ValueError) as e:
            raise ModelError(f"model call failed: {e}") from e
        return reply
