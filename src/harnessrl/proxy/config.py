"""Config sections of `proxy/`: the model-API proxy.

Assembled into `harnessrl.config.Config`, which re-exports them. A section module imports only
pydantic, `Section` and other section modules, so `harnessrl.config` never imports what they configure.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from harnessrl.config_section import Section


class ProxyConfig(Section):
    host: str = "127.0.0.1"
    """Interface the proxy listens on."""
    port: int = 0
    """TCP port (0 = pick a free one)."""
    max_body_bytes: int = 16 * 1024 * 1024
    """Requests larger than this get 413 (after gzip/deflate decoding). Bodies over 256 KiB are
    parsed and rendered in a worker thread, so they do not stall other sessions."""
    max_prompt_tokens: int | None = Field(default=262_144, ge=1)
    """Rendered prompts longer than this get the API's "prompt is too long" 400, whatever the engine's
    context (None = only the context); this also bounds what one request costs the tokenizer."""
    images: Literal["placeholder", "reject"] = "placeholder"
    """Image parts (a PNG read by Claude Code, Codex's `view_image`) for a text-only policy:
    `placeholder` = replaced by a short text (counted on the call: `replaced_images`), `reject` = 400."""
    header_timeout_s: float = Field(default=10.0, gt=0)
    """A request's headers must arrive within this many seconds of its first byte (or of the
    connection opening); slower connections (slowloris) are closed."""
    idle_timeout_s: int = Field(default=600, ge=1)
    """Idle keep-alive connections are closed after this many seconds (harnesses keep theirs open
    while a tool runs)."""
    max_connections: int | None = Field(default=1024, ge=1)
    """Open connections (or requests in flight) past this get 503 (None = no cap)."""
    max_calls_in_flight: int | None = Field(default=8, ge=1)
    """Model calls of one rollout generating at once; more get 429 (the harness's client retries).
    The engine's batch is shared by every rollout: one rollout's commands could otherwise fill it
    with long generations and starve the others (None = no cap)."""
    keepalive_s: float = 2.0
    """Interval of SSE keep-alives while generating (must stay under 3 s)."""
    capture_dir: str | None = None
    """Where per-rollout call JSONL files are flushed (None = memory only)."""
