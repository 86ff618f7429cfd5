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
    """Interface the proxy listens on. Proxy processes on Ray workers listen on 127.0.0.1 of their
    machine (their sandboxes are there) unless this is `0.0.0.0`."""
    port: int = 0
    """TCP port (0 = pick a free one); with `processes` > 1, process i takes `port + i`."""
    processes: int = Field(default=0, ge=0)
    """With `rollout.backend = "asyncio"`: proxy processes on this machine serving the rollouts'
    sessions, each with its own core and heap, calling the engine through the engine server (0 = the
    proxy runs in this process's event loop, beside the engine and the trainer). With Ray every
    worker has a proxy process of its own whatever this says."""
    engine_host: str | None = None
    """Interface of the engine server, which proxy processes call the engine through (`processes` > 0,
    or Ray): None = 127.0.0.1, or with Ray on an existing cluster this node's address on the cluster's
    network (its private interface). Every request must carry the run's secret token."""
    engine_port: int = 0
    """Port of the engine server (0 = a free one)."""
    max_body_bytes: int = 16 * 1024 * 1024
    """Requests larger than this get 413 (after gzip/deflate decoding). Bodies of 16 KiB and up are
    parsed, rendered and tokenized in a worker thread, so they do not stall other sessions."""
    max_prompt_tokens: int | None = Field(default=262_144, ge=1)
    """Rendered prompts longer than this get the API's "prompt is too long" 400, whatever the engine's
    context (None = only the context); this also bounds what one request costs the tokenizer."""
    images: Literal["placeholder", "reject"] = "placeholder"
    """Image parts (a PNG read by Claude Code, Codex's `view_image`) for a text-only policy:
    `placeholder` = replaced by a short text (counted on the call: `replaced_images`), `reject` = 400."""
    header_timeout_s: float = Field(default=10.0, gt=0)
    """A request's headers must arrive within this many seconds of its first byte (or of the
    connection opening); slower connections (slowloris) are closed."""
    body_timeout_s: float = Field(default=60.0, gt=0)
    """A request's body must arrive whole within this many seconds of its headers, or the request
    gets a 408 and its connection is closed (a body trickled a byte at a time held a connection, and
    its share of `max_connections`, for as long as its sandbox lived)."""
    idle_timeout_s: int = Field(default=600, ge=1)
    """Idle keep-alive connections are closed after this many seconds (harnesses keep theirs open
    while a tool runs)."""
    max_connections: int | None = Field(default=1024, ge=1)
    """Open connections (or requests in flight) past this get 503 (None = no cap)."""
    max_calls_in_flight: int | None = Field(default=8, ge=1)
    """Model calls of one rollout generating at once; more get 429 (the harness's client retries).
    The engine's batch is shared by every rollout: one rollout's commands could otherwise fill it
    with long generations and starve the others (None = no cap)."""
    max_rollout_tokens: int | None = Field(default=32_000_000, ge=1)
    """Prompt and output tokens one rollout's recorded calls may hold; once they do, its further calls
    get a 400 (its harness stops or fails: the rollout is scored as it stands). Each recorded call
    keeps its whole prompt, and a re-sent body is answered by replay at no engine cost, so a rollout's
    commands could otherwise grow the proxy by gigabytes a minute (None = no cap)."""
    keepalive_s: float = 2.0
    """Interval of SSE keep-alives while generating (must stay under 3 s)."""
    capture_dir: str | None = None
    """Where per-rollout call JSONL files are flushed (None = memory only)."""
