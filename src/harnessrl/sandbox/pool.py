"""A pool of prewarmed sandboxes: creation (folders, bwrap, the agent's start-up) happens ahead of use.

    async with SandboxPool(SandboxSpec(endpoint=...), size=8) as pool:
        sb = await pool.acquire()        # ready at once when the pool has one, else the next one made
        try: ...
        finally: await sb.destroy()      # sandboxes are single use: never returned to the pool

Only sandboxes that own their workspace can be prewarmed (the spec's `workspace` must be None): the
caller fills `sb.host_workspace` after acquiring. A request for a different spec (another mount
point, say) bypasses the pool.

Under load (rollouts back to back faster than sandboxes start) the pool must not lose to creating
each sandbox on demand, so:
- at most `max_creating` creations run at once (default: twice the CPU count). Creating a sandbox is
  mostly CPU work (fork, namespaces, mounts, the agent's start-up); thirty of them at once on two
  cores finish together, each ~15x late, and compete with the rollouts running; a few at a time
  finish one after another, the first soon. Two per core rather than one: a creation also waits (on
  the kernel, on its child's start-up). Trivial rollouts back to back, four idle runs each
  (`benchmarks/sandbox.py`, 2026-12-03): at 8 concurrent 0.89-0.98x the rate of fresh sandboxes
  (mean 0.94) against 0.73-1.08x (mean 0.89) with one per core, at 32 1.10-1.39x (mean 1.26)
  against 1.13-1.30x (mean 1.20). At 8 that is parity within the noise: each rollout costs one
  creation either way, and a trivial one leaves no idle time to create in;
- a caller that finds the pool empty queues, and each sandbox made goes to the longest-waiting caller
  first (FIFO), else to the idle list. One wake-up per sandbox, not one per caller per creation;
- the pool keeps `size` sandboxes idle or on the way, plus one more per queued caller.

A creation that fails is logged and counted in `failed` and not retried by itself; the caller it
would have served (if any) creates one directly, and gets SandboxError if that fails too.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import os

from harnessrl.protocols import Service
from harnessrl.sandbox.sandbox import Sandbox
from harnessrl.sandbox.spec import SandboxSpec

log = logging.getLogger(__name__)


class SandboxPool(Service):
    """Keeps up to `size` sandboxes of one spec created and idle (module docstring)."""

    def __init__(self, spec: SandboxSpec, size: int, max_creating: int | None = None) -> None:
        if spec.workspace is not None:
            raise ValueError("a pooled sandbox must own its workspace (SandboxSpec.workspace=None)")
        if max_creating is not None and max_creating < 1:
            raise ValueError(f"max_creating must be at least 1, got {max_creating}")
        self.spec = spec
        self.size = size
        self.max_creating = max_creating or 2 * (os.cpu_count() or 1)
        """Creations running at once, at most (module docstring)."""
        self.failed = 0
        """Background creations that failed."""
        self.hits = 0
        """acquire() calls served by a sandbox the pool made (idle, or the next one made)."""
        self._ready: list[Sandbox] = []
        self._filling: set[asyncio.Task[None]] = set()
        self._waiters: collections.deque[asyncio.Future[Sandbox | None]] = collections.deque()
        self._closed = False

    async def start(self) -> None:
        """Fill the pool and wait until it is full (or a creation failed)."""
        self._refill()
        while self._filling:
            await asyncio.gather(*list(self._filling), return_exceptions=True)

    def _wanted(self) -> int:
        return max(self.size - len(self._ready), self.waiting)

    def _refill(self) -> None:
        while (
            not self._closed
            and len(self._filling) < self.max_creating
            and len(self._filling) < self._wanted()
        ):
            task = asyncio.create_task(self._create_one())
            self._filling.add(task)
            task.add_done_callback(self._filling.discard)

    async def _create_one(self) -> None:
        try:
            sb = await Sandbox.create(self.spec)
        except Exception as e:  # a failed prewarm is not fatal: its caller creates one directly
            self.failed += 1
            log.warning("sandbox pool: prewarm failed: %s", e)
            self._wake(None)
            return
        self._filling.discard(asyncio.current_task())  # done: `_refill` below may start its successor
        if self._closed:
            await sb.destroy()
            return
        self._deliver(sb)
        self._refill()

    def _wake(self, result: Sandbox | None) -> bool:
        """Hand `result` to the longest-waiting caller; False when nobody waits."""
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(result)
                return True
        return False

    def _deliver(self, sb: Sandbox) -> None:
        if not self._wake(sb):
            self._ready.append(sb)

    async def acquire(self, spec: SandboxSpec | None = None) -> Sandbox:
        """A running sandbox for `spec` (default: the pool's). The caller destroys it when done.

        Takes an idle sandbox if there is one; else queues for the next one the pool makes (starting
        one beside the pool's creations would only make all of them later on a busy machine).
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
            if self._closed:
                return await Sandbox.create(self.spec)
            waiter: asyncio.Future[Sandbox | None] = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            self._refill()
            try:
                got = await waiter
            except asyncio.CancelledError:
                made = waiter.result() if waiter.done() and not waiter.cancelled() else None
                if made is not None:  # made for us after all: the next caller's
                    self._deliver(made)
                raise
            if got is None:  # the creation meant for us failed, or the pool closed
                return await Sandbox.create(self.spec)
            if got.alive:
                self.hits += 1
                return got
            await got.destroy()

    @property
    def idle(self) -> int:
        return len(self._ready)

    @property
    def refilling(self) -> int:
        """Creations under way."""
        return len(self._filling)

    @property
    def waiting(self) -> int:
        """Callers queued for the next sandbox made."""
        return sum(1 for w in self._waiters if not w.done())

    async def close(self) -> None:
        """Destroy every idle sandbox and stop refilling; queued callers create their own. Acquired
        sandboxes are the caller's."""
        self._closed = True
        while self._wake(None):
            pass
        for task in list(self._filling):
            with contextlib.suppress(Exception):
                await task
        ready, self._ready = self._ready, []
        await asyncio.gather(*(sb.destroy() for sb in ready))

    async def stop(self) -> None:
        """`close`, when `async with` leaves the pool."""
        await self.close()
