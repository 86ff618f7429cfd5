"""The core interfaces, in one short file. Implementations live in their packages; registries are
literal dicts next to them (`engines.ENGINES`, `harnesses.HARNESSES`, ...), no plugin magic."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Protocol, Self, runtime_checkable

from harnessrl.types import FinishReason


@dataclass(frozen=True)
class SamplingParams:
    """How to sample one completion."""

    temperature: float = 1.0
    top_p: float = 1.0
    max_tokens: int = 1024
    stop_token_ids: tuple[int, ...] = ()
    """Generation stops after emitting any of these (the stop token is kept in the output)."""
    seed: int | None = None


@dataclass
class GenerationResult:
    """What an engine sampled: exact ids and the log-prob of each under the sampling distribution."""

    output_ids: list[int]
    output_logprobs: list[float]
    finish_reason: FinishReason
    meta: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class Engine(Protocol):
    """Generates from token ids. Many `generate` calls may be in flight at once; the engine batches."""

    @property
    def tokenizer(self) -> Any:
        """A Hugging Face tokenizer (with chat template) for this engine's model."""
        ...

    async def generate(self, prompt_ids: list[int], sampling: SamplingParams) -> GenerationResult: ...

    async def update_weights(self, state_dict: dict[str, Any]) -> None:
        """Load new policy weights (a name -> tensor mapping); in-flight requests finish first."""
        ...

    async def close(self) -> None: ...


class Service:
    """A base for what is started and stopped (servers, pools): `async with` awaits `start()` on entry
    and `stop()` on exit, whatever happened inside."""

    async def start(self) -> object:
        """Start serving (a server returns its URL); nothing to start by default."""
        return None

    async def stop(self) -> None:
        """Stop serving and let go of what `start` took."""

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()
