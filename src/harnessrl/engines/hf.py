"""The embedded engine: a transformers causal LM in this process, with continuous batching.

Design. `generate()` is an asyncio front end: it validates the request, puts it on a thread-safe inbox
and awaits a future. ONE worker thread owns the model and loops over:

1. admit: take waiting requests in arrival order while fewer than `max_batch` rows decode. Each new
   request is prefilled ALONE (batch of one, no padding), starting after its longest common prefix
   with a finished sequence (`prefix_cache.py`: agent turns re-send their history, GRPO siblings
   share a first prompt); its first token is sampled and its KV cache is merged into the running
   batch: caches are left-padded with zeros to a common width and stacked on the batch axis. So a
   request that arrives while a batch decodes joins it at the next step boundary, after its prefill.
2. decode: one forward of every row's last token against the shared cache, with a 2-D attention mask
   that hides each row's left padding and explicit position ids (each row's own length), then one
   sampled token per row (`sampling.sample_rows`).
3. leave: rows that hit a stop id ("stop"; the stop token is kept), their `max_tokens` or the context
   end ("length"), or whose caller went away (cancelled future) leave the batch; their keys/values go
   to the prefix cache; leading cache columns that are padding for every remaining row are trimmed.

Weight updates are queued like requests: when one reaches the front, admission pauses, the running
batch finishes, the weights are loaded, `weights_version` goes up, the prefix cache is dropped, and
admission resumes. Every result records the `weights_version` it was sampled with in `meta` (with
`prompt_tokens` and `cached_tokens`), and one request never spans two versions.

Errors: a request that cannot run (empty, token ids outside the vocabulary, no room in the context)
fails alone with EngineError before it is queued; an exception in its prefill fails only that
request; an exception in a batched decode step fails the rows of that step (they share one forward).

Simplified, on purpose: prefill is not chunked and not batched (a long prompt stalls decoding for its
duration; identical prompts arriving together are each prefilled); the cache is one padded tensor per
layer (`kv_cache.GrowingLayer`: appends in place, but rows joining or leaving copy it, and padding
wastes room when lengths differ a lot; paged attention is what the vLLM engine is for); models must
use full attention in every layer (no sliding-window or recurrent layers).

Sampling and log-probs (`sampling.py`): each recorded log-prob is that of the sampled token under
softmax(logits / temperature), BEFORE top-p truncation, i.e. exactly what a trainer recomputes with
`models.teacher_force_logprobs(..., temperature)`; greedy (temperature ~0) records temperature-1
log-probs. Each request draws from its own generator, seeded by `SamplingParams.seed` or else from the
engine's `seed`, so a seeded request gives the same ids alone or in any batch, except where two
candidates tie within float rounding (batched and solo forwards differ by ~1e-6).
"""

from __future__ import annotations

import asyncio
import inspect
import queue
import random
import threading
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import torch

from harnessrl.engines.config import EngineConfig
from harnessrl.engines.kv_cache import GrowingCache, cache_from, merge_rows, row_kv, select_rows
from harnessrl.engines.models import DEFAULT_NAME, load_model, load_tokenizer
from harnessrl.engines.prefix_cache import PrefixCache
from harnessrl.engines.sampling import sample_rows
from harnessrl.protocols import GenerationResult, SamplingParams
from harnessrl.types import EngineError, FinishReason


@dataclass(eq=False)
class _Request:
    prompt_ids: list[int]
    sampling: SamplingParams
    max_tokens: int
    """Effective cap: the request's max_tokens, or less when the context ends first."""
    future: asyncio.Future[GenerationResult]
    loop: asyncio.AbstractEventLoop
    generator: torch.Generator
    output_ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    version: int = 0
    cached: int = 0
    """Prompt tokens whose keys/values came from the prefix cache."""


@dataclass(eq=False)
class _WeightUpdate:
    state_dict: dict[str, Any]
    future: asyncio.Future[None]
    loop: asyncio.AbstractEventLoop


@dataclass
class EngineStats:
    """Counters kept by the worker thread (read them for tests and logs; they are not synchronised)."""

    prefills: int = 0
    decode_steps: int = 0
    tokens_generated: int = 0
    peak_batch: int = 0
    joined_running_batch: int = 0
    """Requests admitted while other rows were already decoding."""
    prefill_tokens: int = 0
    """Prompt tokens run through the model (prefix-cache hits excluded)."""
    cached_tokens: int = 0
    """Prompt tokens whose keys/values came from the prefix cache."""


def _settle(loop: asyncio.AbstractEventLoop, fut: asyncio.Future[Any], value: Any) -> None:
    """Resolve `fut` from the worker thread (an exception value rejects it); a dead loop is ignored."""

    def apply() -> None:
        if fut.done():
            return
        if isinstance(value, BaseException):
            fut.set_exception(value)
        else:
            fut.set_result(value)

    try:
        loop.call_soon_threadsafe(apply)
    except RuntimeError:
        pass  # the caller's event loop is closed: nobody is waiting any more


class _Batch:
    """The decoding rows and their shared, left-padded KV cache (width = cache length in tokens)."""

    def __init__(self) -> None:
        self.rows: list[_Request] = []
        self.lengths: list[int] = []
        """Real (unpadded) tokens of each row in the cache."""
        self.cache: GrowingCache | None = None
        self.width = 0

    def add(self, req: _Request, cache: GrowingCache, length: int) -> None:
        if self.cache is None:
            self.cache, self.width = cache, length
        else:
            self.width = max(self.width, length)
            merge_rows(self.cache, cache, self.width)
        self.rows.append(req)
        self.lengths.append(length)

    def step_inputs(self, device: torch.device) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(input_ids_B1, position_ids_B1, attention_mask_BW) for one decode step; W = width + 1."""
        ids_B1 = torch.tensor([[r.output_ids[-1]] for r in self.rows], dtype=torch.long, device=device)
        len_B = torch.tensor(self.lengths, dtype=torch.long, device=device)
        cols_W = torch.arange(self.width + 1, device=device)
        mask_BW = (cols_W[None, :] >= (self.width - len_B)[:, None]).long()
        return ids_B1, len_B[:, None], mask_BW

    def advance(self) -> None:
        self.lengths = [n + 1 for n in self.lengths]
        self.width += 1

    def keep(self, keep: list[int]) -> None:
        """Keep only these rows (by index) and trim columns that are padding for all of them."""
        self.rows = [self.rows[i] for i in keep]
        self.lengths = [self.lengths[i] for i in keep]
        if not self.rows or self.cache is None:
            self.cache, self.width = None, 0
            return
        cut = self.width - max(self.lengths)
        select_rows(self.cache, keep, cut)
        self.width -= cut


class HFEngine:
    """Continuous-batching transformers engine (see the module docstring for the design).

    `max_context` defaults to the model's `max_position_embeddings`; `seed` seeds the generators of
    requests without their own seed; `prefix_cache_tokens` bounds the prefix cache (0 turns it off).
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        max_batch: int = 16,
        max_context: int | None = None,
        seed: int | None = None,
        prefix_cache_tokens: int = 8192,
        model_id: str | None = None,
    ) -> None:
        if max_batch < 1:
            raise ValueError("max_batch must be at least 1")
        self.model = model.eval()
        self._tokenizer = tokenizer
        self.max_batch = max_batch
        self.max_context = max_context or int(model.config.max_position_embeddings)
        self.vocab_size = int(model.get_output_embeddings().weight.shape[0])
        self.device = next(model.parameters()).device
        self.model_id = model_id or str(getattr(model.config, "_name_or_path", "") or type(model).__name__)
        """Recorded on every ModelCall (`from_config`: the configured model, `default` by its name)."""
        self.weights_version = 0
        self.stats = EngineStats()
        params = inspect.signature(model.forward).parameters
        self._cache_kw = "cache" if "cache" in params else "past_key_values"
        self._seeds = random.Random(seed)
        self._prefix = PrefixCache(prefix_cache_tokens)
        self._inbox: queue.SimpleQueue[_Request | _WeightUpdate | None] = queue.SimpleQueue()
        self._pending: deque[_Request | _WeightUpdate] = deque()
        self._batch = _Batch()
        self._closed = False
        self._thread = threading.Thread(target=self._worker, name="hf-engine", daemon=True)
        self._thread.start()

    @classmethod
    def from_config(cls, cfg: EngineConfig) -> HFEngine:
        """Load `cfg.model` (`default`, `tiny-qwen3`, or a checkpoint folder) with its tokenizer."""
        model = load_model(cfg.model, cfg.dtype, cfg.device, context_length=cfg.context_length)
        tok = load_tokenizer(cfg.model)
        return cls(
            model,
            tok,
            max_batch=cfg.max_batch,
            max_context=cfg.context_length,
            prefix_cache_tokens=cfg.prefix_cache_tokens,
            model_id=DEFAULT_NAME if cfg.model == "default" else str(cfg.model),
        )

    @property
    def tokenizer(self) -> Any:
        return self._tokenizer

    # ---------------------------------------------------------------- asyncio front end

    async def generate(self, prompt_ids: list[int], sampling: SamplingParams) -> GenerationResult:
        if self._closed:
            raise EngineError("engine is closed")
        room = self._validate(prompt_ids, sampling)
        loop = asyncio.get_running_loop()
        gen = torch.Generator(device=self.device)
        gen.manual_seed(sampling.seed if sampling.seed is not None else self._seeds.getrandbits(63))
        fut: asyncio.Future[GenerationResult] = loop.create_future()
        req = _Request(list(prompt_ids), sampling, min(sampling.max_tokens, room), fut, loop, gen)
        self._inbox.put(req)
        return await fut

    def _validate(self, prompt_ids: list[int], sampling: SamplingParams) -> int:
        """Raise EngineError if the request cannot run; return how many tokens fit after the prompt."""
        if not prompt_ids:
            raise EngineError("empty prompt")
        if sampling.max_tokens < 1:
            raise EngineError(f"max_tokens must be at least 1, got {sampling.max_tokens}")
        if not 0.0 < sampling.top_p <= 1.0:
            raise EngineError(f"top_p must be in (0, 1], got {sampling.top_p}")
        bad = [t for t in prompt_ids if not 0 <= t < self.vocab_size]
        if bad:
            raise EngineError(f"prompt token ids outside the vocabulary (size {self.vocab_size}): {bad[:5]}")
        room = self.max_context - len(prompt_ids)
        if room < 1:
            raise EngineError(
                f"prompt of {len(prompt_ids)} tokens leaves no room in the context of {self.max_context}"
            )
        return room

    async def update_weights(self, state_dict: dict[str, Any]) -> None:
        """Load weights once the running batch has finished; requests queued after this wait for it."""
        if self._closed:
            raise EngineError("engine is closed")
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[None] = loop.create_future()
        self._inbox.put(_WeightUpdate(state_dict, fut, loop))
        await fut

    async def close(self) -> None:
        """Stop the worker; requests still queued or decoding fail with EngineError. Idempotent."""
        if not self._closed:
            self._closed = True
            self._inbox.put(None)
        await asyncio.to_thread(self._thread.join)

    # ---------------------------------------------------------------- worker thread

    def _worker(self) -> None:
        error = EngineError("engine is closed")
        try:
            with torch.inference_mode():
                while self._receive(block=not self._batch.rows and not self._pending):
                    self._admit()
                    if self._batch.rows:
                        self._decode_step()
        except Exception as e:  # a bug in the loop itself: fail everyone rather than hang them
            error = EngineError(f"engine worker crashed: {type(e).__name__}: {e}")
        finally:
            self._closed = True
            while not self._receive(block=False):  # whatever is still in the inbox fails too
                pass
            for item in [*self._batch.rows, *self._pending]:
                _settle(item.loop, item.future, error)
            self._batch, self._pending = _Batch(), deque()

    def _receive(self, block: bool) -> bool:
        """Move inbox items to the pending queue; False once close() was called."""
        try:
            item = self._inbox.get() if block else self._inbox.get_nowait()
            while True:
                if item is None:
                    return False
                self._pending.append(item)
                item = self._inbox.get_nowait()
        except queue.Empty:
            return True

    def _admit(self) -> None:
        while self._pending:
            item = self._pending[0]
            if isinstance(item, _WeightUpdate):
                if self._batch.rows:
                    return  # let the running batch finish on the old weights
                self._pending.popleft()
                self._apply_update(item)
            elif len(self._batch.rows) >= self.max_batch:
                return
            else:
                self._pending.popleft()
                if not item.future.done():  # a cancelled caller needs no prefill
                    self._prefill(item)

    def _forward(
        self, ids: torch.Tensor, positions: torch.Tensor, mask: torch.Tensor | None, cache: Any
    ) -> Any:
        kwargs = {self._cache_kw: cache}
        return self.model(
            input_ids=ids,
            position_ids=positions,
            attention_mask=mask,
            use_cache=True,
            logits_to_keep=1,
            **kwargs,
        )

    def _prefill(self, req: _Request) -> None:
        """Run the prompt (after any prefix-cache hit), sample its first token, join the batch."""
        n = len(req.prompt_ids)
        try:
            hit = self._prefix.lookup(req.prompt_ids)
            start, cache = (hit[0], cache_from(hit[1])) if hit else (0, GrowingCache())
            ids_1T = torch.tensor([req.prompt_ids[start:]], dtype=torch.long, device=self.device)
            positions_1T = torch.arange(start, n, device=self.device)[None, :]
            logits_1V = self._forward(ids_1T, positions_1T, None, cache).logits[:, -1]
            req.version, req.cached = self.weights_version, start
            finished = self._sample([req], logits_1V)[0]
        except Exception as e:  # one bad request must not take the engine down
            _settle(req.loop, req.future, EngineError(f"prefill failed: {type(e).__name__}: {e}"))
            return
        self.stats.prefills += 1
        self.stats.prefill_tokens += n - start
        self.stats.cached_tokens += start
        self.stats.joined_running_batch += bool(self._batch.rows)
        if finished is not None:
            self._prefix.insert(req.prompt_ids, row_kv(cache, 0, n))
            self._finish(req, finished)
            return
        self._batch.add(req, cache, n)
        self.stats.peak_batch = max(self.stats.peak_batch, len(self._batch.rows))

    def _decode_step(self) -> None:
        batch = self._batch
        try:
            ids_B1, pos_B1, mask_BW = batch.step_inputs(self.device)
            logits_BV = self._forward(ids_B1, pos_B1, mask_BW, batch.cache).logits[:, -1]
            finished = self._sample(batch.rows, logits_BV)
        except Exception as e:
            err = EngineError(f"decode step failed: {type(e).__name__}: {e}")
            for row in batch.rows:
                _settle(row.loop, row.future, err)
            self._batch = _Batch()
            return
        self.stats.decode_steps += 1
        batch.advance()
        keep = []
        for i, (row, reason) in enumerate(zip(batch.rows, finished, strict=True)):
            if reason is not None:
                assert batch.cache is not None
                kv = row_kv(batch.cache, i, batch.lengths[i])  # prompt + output[:-1]
                self._prefix.insert(row.prompt_ids + row.output_ids[:-1], kv)
                self._finish(row, reason)
            elif not row.future.done():
                keep.append(i)
        if len(keep) < len(batch.rows):
            batch.keep(keep)

    def _sample(self, rows: list[_Request], logits_BV: torch.Tensor) -> list[FinishReason | None]:
        """Sample one token for each row, append it, and say which rows are done and why."""
        dev = logits_BV.device
        temp_B = torch.tensor([r.sampling.temperature for r in rows], dtype=torch.float32, device=dev)
        top_p_B = torch.tensor([r.sampling.top_p for r in rows], dtype=torch.float32, device=dev)
        u_B = torch.stack([torch.rand((), generator=r.generator, device=dev) for r in rows])
        ids_B, logp_B = sample_rows(logits_BV, temp_B, top_p_B, u_B)
        reasons: list[FinishReason | None] = []
        for row, tok, lp in zip(rows, ids_B.tolist(), logp_B.tolist(), strict=True):
            row.output_ids.append(tok)
            row.logprobs.append(lp)
            if tok in row.sampling.stop_token_ids:
                reasons.append("stop")
            elif len(row.output_ids) >= row.max_tokens:
                reasons.append("length")
            else:
                reasons.append(None)
        self.stats.tokens_generated += len(rows)
        return reasons

    def _finish(self, req: _Request, reason: FinishReason) -> None:
        meta = {
            "weights_version": req.version,
            "prompt_tokens": len(req.prompt_ids),
            "cached_tokens": req.cached,
        }
        _settle(req.loop, req.future, GenerationResult(req.output_ids, req.logprobs, reason, meta))

    def _apply_update(self, upd: _WeightUpdate) -> None:
        """Check names and shapes first, so a bad state dict changes nothing; then copy and bump."""
        try:
            current = self.model.state_dict()
            unknown = [k for k in upd.state_dict if k not in current]
            wrong = [
                k for k, v in upd.state_dict.items() if k in current and tuple(v.shape) != current[k].shape
            ]
            if unknown or wrong:
                raise EngineError(f"update_weights: unknown names {unknown[:5]}, wrong shapes {wrong[:5]}")
            self.model.load_state_dict(upd.state_dict, strict=False)
        except Exception as e:
            err = e if isinstance(e, EngineError) else EngineError(f"update_weights failed: {e!r}")
            _settle(upd.loop, upd.future, err)
            return
        self.weights_version += 1
        self._prefix.clear()  # keys/values computed with the old weights
        _settle(upd.loop, upd.future, None)
