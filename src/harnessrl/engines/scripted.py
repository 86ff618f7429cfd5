"""The scripted engine: replays chosen assistant turns as exact token ids. Tests drive harnesses with it.

Each script is a list of assistant turns (a ChatMessage or plain text), rendered once through
`ChatFormat.render_assistant` into the ids a model would emit, end-of-turn token included. The choice
of turn is stateless: the k-th turn answers a prompt that already holds k assistant turns (counted as
`<|im_start|>assistant` markers in the prompt ids, minus the generation prompt's own), so concurrent
sessions, retries and re-sent histories all replay correctly. With several scripts, the first whose
`match` is a substring of the decoded prompt is used (different tasks in one batch, different scripts).

Log-probs are real when a scorer `(prompt_ids, output_ids) -> log-probs` or a model is given (teacher
forcing with `harnessrl.engines.models.teacher_force_logprobs` at the call's temperature), else zeros.
`fault_calls` makes chosen calls (0-based, in arrival order across the engine) raise EngineError.
`weights_version` counts `update_weights` calls (with or without a scoring model) and every result
records it in `meta`, like the embedded engine's.

Left out: sampling. Temperature, top-p and seed do not change the replayed ids; max_tokens and stop ids
are honoured by cutting the scripted ids (finish_reason "length" / "stop").
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from harnessrl.chat.format import ChatFormat
from harnessrl.protocols import GenerationResult, SamplingParams
from harnessrl.types import ChatMessage, EngineError, FinishReason

Scorer = Callable[[list[int], list[int]], list[float]]
"""(prompt_ids, output_ids) -> the log-prob of each output id."""


@dataclass
class Script:
    """The assistant turns of one scripted conversation."""

    turns: list[ChatMessage | str]
    """Turn k answers a prompt with k assistant turns; a str is a plain text answer."""
    match: str | None = None
    """Substring of the decoded prompt that selects this script; None matches every prompt."""


def count_subsequence(ids: Sequence[int], pattern: Sequence[int]) -> int:
    """Non-overlapping occurrences of `pattern` in `ids` (the first id is searched at C speed)."""
    seq, pat = list(ids), list(pattern)
    if not pat:
        return 0
    count, i = 0, 0
    while True:
        try:
            i = seq.index(pat[0], i)
        except ValueError:
            return count
        if seq[i : i + len(pat)] == pat:
            count += 1
            i += len(pat)
        else:
            i += 1


def cut_output(ids: list[int], sampling: SamplingParams) -> tuple[list[int], FinishReason]:
    """Apply stop ids (kept in the output) and max_tokens to scripted ids."""
    for i, tok in enumerate(ids[: sampling.max_tokens]):
        if tok in sampling.stop_token_ids:
            return ids[: i + 1], "stop"
    if len(ids) > sampling.max_tokens:
        return ids[: sampling.max_tokens], "length"
    return list(ids), "stop"


class ScriptedEngine:
    """An Engine that answers with scripted assistant turns (see the module docstring)."""

    def __init__(
        self,
        fmt: ChatFormat,
        scripts: Sequence[Script] | Sequence[ChatMessage | str],
        *,
        scorer: Scorer | None = None,
        model: Any = None,
        fault_calls: Collection[int] = (),
        exhausted: Literal["error", "repeat_last"] = "error",
        max_context: int | None = None,
        model_id: str = "scripted",
    ) -> None:
        self.fmt = fmt
        self.model_id = model_id
        """Recorded on every ModelCall."""
        self.max_context = max_context
        """The context the proxy checks prompts against (None = none: a replay has no real limit)."""
        if scripts and all(isinstance(s, Script) for s in scripts):
            self.scripts: list[Script] = [s for s in scripts if isinstance(s, Script)]
        else:
            self.scripts = [Script(turns=[s for s in scripts if not isinstance(s, Script)])]
        self.turn_ids = [[fmt.render_assistant(self._message(t)) for t in s.turns] for s in self.scripts]
        """Output ids of each script's turns, rendered once."""
        self.scorer = scorer
        self.model = model
        self.fault_calls = frozenset(fault_calls)
        self.exhausted = exhausted
        self.calls = 0
        """Number of generate calls so far (faulted ones included)."""
        self.weights_version = 0
        """Policy version: how many times `update_weights` has loaded weights."""
        self._inflight = 0

    @property
    def tokenizer(self) -> Any:
        return self.fmt.tokenizer

    @staticmethod
    def _message(turn: ChatMessage | str) -> ChatMessage:
        return ChatMessage(role="assistant", content=turn) if isinstance(turn, str) else turn

    def select(self, prompt_ids: list[int]) -> tuple[int, int]:
        """(script index, turn index) answering this prompt; raises EngineError if none does."""
        index = 0
        if any(s.match is not None for s in self.scripts):
            text = str(self.fmt.tokenizer.decode(prompt_ids, skip_special_tokens=False))
            found = [i for i, s in enumerate(self.scripts) if s.match is None or s.match in text]
            if not found:
                raise EngineError("no script matches this prompt")
            index = found[0]
        turns = len(self.turn_ids[index])
        k = max(count_subsequence(prompt_ids, self.fmt.assistant_start_ids) - 1, 0)
        if k >= turns:
            if self.exhausted == "error" or turns == 0:
                raise EngineError(f"script {index} has {turns} turns; the prompt already holds {k}")
            k = turns - 1
        return index, k

    async def generate(self, prompt_ids: list[int], sampling: SamplingParams) -> GenerationResult:
        call = self.calls
        self.calls += 1
        if call in self.fault_calls:
            raise EngineError(f"injected fault on call {call}")
        script, turn = self.select(prompt_ids)
        output_ids, finish = cut_output(self.turn_ids[script][turn], sampling)
        self._inflight += 1
        version = self.weights_version
        try:
            logprobs = await self._logprobs(prompt_ids, output_ids, sampling.temperature)
        finally:
            self._inflight -= 1
        meta = {"script": script, "turn": turn, "call": call, "weights_version": version}
        return GenerationResult(output_ids, logprobs, finish, meta)

    async def _logprobs(self, prompt_ids: list[int], output_ids: list[int], temp: float) -> list[float]:
        if self.scorer is None and self.model is None:
            return [0.0] * len(output_ids)
        if self.scorer is not None:
            scored = await asyncio.to_thread(self.scorer, prompt_ids, output_ids)
        else:
            from harnessrl.engines.models import teacher_force_logprobs

            scored = await asyncio.to_thread(teacher_force_logprobs, self.model, prompt_ids, output_ids, temp)
        if len(scored) != len(output_ids):
            raise EngineError(f"scorer returned {len(scored)} log-probs for {len(output_ids)} ids")
        return [float(x) for x in scored]

    async def update_weights(self, state_dict: dict[str, Any]) -> None:
        """Load weights into the scoring model (missing keys keep their values), if there is one, and
        bump `weights_version`.

        Waits for calls being scored to finish; the load itself runs on the event loop thread, so no
        call of this loop starts scoring until it is done (one call never spans two versions).
        """
        if self.model is None:
            return
        while self._inflight:
            await asyncio.sleep(0.001)
        result = self.model.load_state_dict(state_dict, strict=False)
        if result.unexpected_keys:
            raise EngineError(f"unexpected weight names: {sorted(result.unexpected_keys)[:5]}")
        self.weights_version += 1

    async def close(self) -> None:
        return None
