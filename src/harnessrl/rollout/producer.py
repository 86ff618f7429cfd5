"""The rollout producer: runs the rollouts of steps ahead of the trainer, at most `lag` steps ahead.

    async with StepProducer(run_rollouts, start=0, stop=10, lag=1) as producer:
        for step in range(10):
            rollouts = await producer.rollouts(step)   # waits for that step's rollouts
            ...train on them, hand the weights to the engine...
            await producer.trained(step)               # lets step + lag + 1 start

`run_rollouts(step)` runs one step's jobs to completion (`RolloutRunner.run_many` of the step's
schedule, or the Ray backend's). The producer starts step `s` once the trainer has finished step
`s - lag - 1`, so every call of step `s` is sampled with the weights of step `s - lag - 1` or newer:
by the time step `s` is trained (after steps `s - 1`, ..., `s - lag`), a rollout is at most `lag`
policy versions old. `lag = 0` is the synchronous loop: each step's rollouts start after the previous
step's weights reached the engine. With `lag > 0` the rollouts of several steps may run at once (they
share the runner's concurrency slots, earlier steps queued first).

The producer never trains and never touches files: it only starts coroutines on the caller's event
loop, so the proxy keeps serving while the trainer (in a thread) updates. Closing it (leaving the
`async with`) cancels rollouts still running for steps nobody will train.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from types import TracebackType

from harnessrl.types import Rollout


@dataclass
class StepRollouts:
    """One step's finished rollouts, with when they ran (wall clock, `time.perf_counter`)."""

    step: int
    rollouts: list[Rollout]
    started: float
    finished: float

    @property
    def seconds(self) -> float:
        return self.finished - self.started


class StepProducer:
    """Runs steps `start .. stop - 1` in order, each at most `lag` steps ahead of `trained` (docstring)."""

    def __init__(
        self,
        run_rollouts: Callable[[int], Awaitable[list[Rollout]]],
        *,
        start: int,
        stop: int,
        lag: int,
    ) -> None:
        if lag < 0:
            raise ValueError(f"lag must be >= 0, got {lag}")
        self.run_rollouts = run_rollouts
        self.start, self.stop, self.lag = start, stop, lag
        self.trained_through = start - 1
        """The last step whose update has reached the engine."""
        self._changed = asyncio.Condition()
        self._tasks: dict[int, asyncio.Task[StepRollouts]] = {}
        self._driver: asyncio.Task[None] | None = None

    def may_start(self, step: int) -> bool:
        """The bound: step `s` may start once step `s - lag - 1` is trained."""
        return step <= self.trained_through + self.lag + 1

    async def _run(self, step: int) -> StepRollouts:
        t0 = time.perf_counter()
        rollouts = await self.run_rollouts(step)
        return StepRollouts(step, list(rollouts), t0, time.perf_counter())

    async def _drive(self) -> None:
        for step in range(self.start, self.stop):
            async with self._changed:
                await self._changed.wait_for(lambda s=step: self.may_start(s))  # type: ignore[misc]
                self._tasks[step] = asyncio.create_task(self._run(step), name=f"rollouts-step-{step}")
                self._changed.notify_all()

    async def rollouts(self, step: int) -> StepRollouts:
        """The finished rollouts of `step` (waits for them; raises what producing them raised)."""
        if not self.start <= step < self.stop:
            raise ValueError(f"step {step} is outside {self.start}..{self.stop - 1}")
        async with self._changed:
            await self._changed.wait_for(lambda: step in self._tasks or self._driver_failed())
        if step not in self._tasks:
            assert self._driver is not None
            await self._driver  # re-raises its error
        return await self._tasks.pop(step)

    def _driver_failed(self) -> bool:
        return self._driver is not None and self._driver.done()

    async def trained(self, step: int) -> None:
        """The trainer finished `step` (its weights are in the engine): later steps may start."""
        async with self._changed:
            self.trained_through = max(self.trained_through, step)
            self._changed.notify_all()

    async def __aenter__(self) -> StepProducer:
        self._driver = asyncio.create_task(self._drive(), name="rollout-producer")
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        pending = [t for t in (self._driver, *self._tasks.values()) if t is not None and not t.done()]
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        self._tasks.clear()
