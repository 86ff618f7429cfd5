"""A pool of prewarmed sandboxes: creation (folders, bwrap, the agent's start-up) happens ahead of use.

    async with SandboxPool(SandboxSpec(endpoint=...), size=8) as pool:
        sb = await pool.acquire()        # ready at once when the pool has one, else created now
        try: ...
        finally: await sb.destroy()      # sandboxes are single use: never returned to the pool

Only sandboxes that own their workspace can be prewarmed (the spec's `workspace` must be None): the
caller fills `sb.host_workspace` after acquiring. A request for a different spec (another mount
point, say) bypasses the pool. Refills run in the background; `acquire` on an empty pool waits for
one under way. A refill that fails is logged and counted in `failed`, and `acquire` then creates one
directly (and raises SandboxError if that fails).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from types import TracebackType

from harnessrl.sandbox.sandbox import Sandbox
from harnessrl.sandbox.spec import SandboxSpec

log = logging.getLogger(__name__)


class SandboxPool:
    """Keeps up to `size` sandboxes of one spec created and idle."""

    def __init__(self, spec: SandboxSpec, size: int) -> None:
        if spec.workspace is not None:
            raise ValueError("a pooled sandbox must own its workspace (SandboxSpec.workspace=None)")
        self.spec = spec
        self.size = size
        self.failed = 0
        """Background creations that failed."""
        self.hits = 0
        """acquire() calls served by a prewarmed sandbox."""
        self._ready: list[Sandbox] = []
        self._filling: set[asyncio.Task[None]] = set()
        self._closed = False

    async def start(self) -> None:
        """Fill the pool and wait until it is full (or each creation has failed)."""
        self._refill()
        await asyncio.gather(*self._filling, return_exceptions=True)

    def _refill(self) -> None:
        while not self._closed and len(self._ready) + len(self._filling) < self.size:
            task = asyncio.create_task(self._create_one())
            self._filling.add(task)
            task.add_done_callback(self._filling.discard)

    async def _create_one(self) -> None:
        try:
            sb = await Sandbox.create(self.spec)
        except Exception as e:  # a failed prewarm is not fatal: acquire() falls back to a direct create
            self.failed += 1
            log.warning("sandbox pool: prewarm failed: %s", e)
            return
        if self._closed:
            await sb.destroy()
        else:
            self._ready.append(sb)

    async def acquire(self, spec: SandboxSpec | None = None) -> Sandbox:
        """A running sandbox for `spec` (default: the pool's). The caller destroys it when done.

        Takes an idle sandbox if there is one; else waits for a creation already under way (starting
        another one beside it would only make both slower on a busy machine); else creates one now.
        """
        if spec is not None and spec != self.spec:
            return await Sandbox.create(spec)
        while True:
            while self._ready:
                sb = self._ready.pop()
                if sb.alive:
                    self.hits += 1
                    self._refill()
                    return sb
                await sb.destroy()
            if self._closed or not self._filling:
                break
            await asyncio.wait(set(self._filling), return_when=asyncio.FIRST_COMPLETED)
        self._refill()
        return await Sandbox.create(self.spec)

    @property
    def idle(self) -> int:
        return len(self._ready)

    @property
    def refilling(self) -> int:
        """Creations under way."""
        return len(self._filling)

    async def close(self) -> None:
        """Destroy every idle sandbox and stop refilling. Acquired sandboxes are the caller's."""
        self._closed = True
        for task in list(self._filling):
            with contextlib.suppress(Exception):
                await task
        ready, self._ready = self._ready, []
        await asyncio.gather(*(sb.destroy() for sb in ready))

    async def __aenter__(self) -> SandboxPool:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()
