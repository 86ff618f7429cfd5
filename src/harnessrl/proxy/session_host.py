"""Where a rollout's session lives, as the rollout runner sees it: this process's proxy, or a proxy
process of its own (`proxy.process.ProxyProcess`). Both are a `SessionHost`:

    opened = await host.open("r0", seed=7, journal=rollout_dir / "calls.jsonl")
    ...the harness calls opened.server_url + "/r/" + opened.token until it ends, or opened.ended is set
    calls = await host.close("r0")          # RecordedCalls: the calls in order, and `.dropped`

`ended` is set when the rollout should stop at once: one of its calls overflowed the context (the
runner's `_until_overflow`), or the proxy process serving it is gone (`lost` says why; the calls it
had journaled are still what `close` returns). The in-process host (`LocalSessions`) wraps the
`SessionStore` the proxy in this event loop serves, so its sessions behave exactly as before.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from harnessrl.proxy.sessions import RecordedCalls, SessionStore

OVERFLOW_TAG = "context_overflow"
"""Tag of a call refused because its prompt does not fit (`handler.record_overflow`)."""


@dataclass
class OpenSession:
    """A rollout's open session: what its harness is pointed at, and when to stop it."""

    rollout_id: str
    token: str
    server_url: str
    """`http://host:port` of the proxy serving it (a sandbox reaches it through its forwarder)."""
    ended: asyncio.Event = field(default_factory=asyncio.Event)
    """Set at a call that overflowed the context, or when the proxy serving it is gone."""
    lost: str | None = None
    """Why the proxy process serving this session is gone (None while it serves)."""


class SessionHost(Protocol):
    """Opens and closes the sessions of rollouts (module docstring)."""

    async def open(
        self, rollout_id: str, seed: int | None = None, journal: Path | None = None
    ) -> OpenSession:
        """Open a session (`journal`: where its calls are appended as they are recorded, or None)."""
        ...

    async def close(self, rollout_id: str) -> RecordedCalls:
        """Close it: its calls in order, calls still in flight recorded as partial, and `.dropped`."""
        ...


class LocalSessions:
    """The `SessionHost` of a proxy in this event loop: its `SessionStore`, unchanged (no journal here:
    a process that closes its own sessions keeps the calls in memory)."""

    def __init__(self, store: SessionStore) -> None:
        self.store = store

    async def open(
        self, rollout_id: str, seed: int | None = None, journal: Path | None = None
    ) -> OpenSession:
        info = self.store.open(rollout_id, seed=seed)
        opened = OpenSession(rollout_id, info.token, self.store.server_url)
        self.store.watch(rollout_id, lambda c: opened.ended.set() if OVERFLOW_TAG in c.tags else None)
        return opened

    async def close(self, rollout_id: str) -> RecordedCalls:
        return self.store.close(rollout_id)
