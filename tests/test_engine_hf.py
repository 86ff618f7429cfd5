"""The embedded engine: log-prob fidelity, continuous batching, sampling, weights, errors, registry."""

from __future__ import annotations

import asyncio
import copy
import json
import math
from pathlib import Path
from typing import Any

import pytest
import torch

from harnessrl.config import EngineConfig, VLLMConfig
from harnessrl.engines import ENGINES, build_engine
from harnessrl.engines.hf import HFEngine
from harnessrl.engines.kv_cache import GrowingCache, GrowingLayer, merge_rows, select_rows
from harnessrl.engines.models import teacher_force_logprobs, tiny_qwen3
from harnessrl.engines.prefix_cache import PrefixCache, common_prefix
from harnessrl.engines.sampling import sample_rows
from harnessrl.protocols import Engine, GenerationResult, SamplingParams
from harnessrl.types import EngineError


def tiny_llama(seed: int = 0) -> Any:
    """SmolLM2-shaped (llama, 3:1 grouped-query attention, tied embeddings, 49152 vocab), but tiny."""
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(
        vocab_size=49152,
        hidden_size=96,
        intermediate_size=192,
        num_hidden_layers=2,
        num_attention_heads=6,
        num_key_value_heads=2,
        head_dim=16,
        max_position_embeddings=2048,
        rope_theta=100000.0,
        tie_word_embeddings=True,
        initializer_range=0.1,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return LlamaForCausalLM(cfg).eval()


@pytest.fixture(scope="module")
def qwen() -> tuple[Any, Any]:
    return tiny_qwen3()


@pytest.fixture(scope="module")
def llama() -> Any:
    return tiny_llama()


@pytest.fixture(params=["qwen3", "llama"])
def model(request: pytest.FixtureRequest, qwen: tuple[Any, Any], llama: Any) -> Any:
    return qwen[0] if request.param == "qwen3" else llama


def prompt(n: int, offset: int = 0) -> list[int]:
    return [(97 * i + 13 * offset + 5) % 40000 + 100 for i in range(n)]


def max_diff(model: Any, p: list[int], r: GenerationResult, temperature: float = 1.0) -> float:
    ref = teacher_force_logprobs(model, p, r.output_ids, temperature=temperature)
    return max(abs(a - b) for a, b in zip(ref, r.output_logprobs, strict=True))


async def wait_for(cond: Any, timeout: float = 30.0) -> None:
    for _ in range(int(timeout / 0.002)):
        if cond():
            return
        await asyncio.sleep(0.002)
    raise AssertionError("condition not reached")


# ------------------------------------------------------------------ sampling (pure function)


def test_inverse_cdf_and_nucleus_pick_exact_tokens() -> None:
    logits = torch.tensor([[math.log(0.5), math.log(0.25), math.log(0.25)]] * 6)
    temp, u = torch.ones(6), torch.tensor([0.0, 0.49, 0.51, 0.74, 0.76, 0.999])
    ids, lps = sample_rows(logits, temp, torch.ones(6), u)
    assert ids.tolist() == [0, 0, 1, 1, 2, 2]
    assert torch.allclose(lps, torch.tensor([0.5, 0.5, 0.25, 0.25, 0.25, 0.25]).log())
    # top_p = 0.6 keeps {0, 1} renormalised to (2/3, 1/3); the log-prob stays the untruncated one
    ids, lps = sample_rows(logits, temp, torch.full((6,), 0.6), u)
    assert ids.tolist() == [0, 0, 0, 1, 1, 1]
    assert lps[3].item() == pytest.approx(math.log(0.25))
    # greedy rows take the argmax whatever the draw, and record the temperature-1 log-prob
    ids, lps = sample_rows(logits, torch.zeros(6), torch.ones(6), u)
    assert ids.tolist() == [0] * 6
    assert lps[0].item() == pytest.approx(math.log(0.5))


def test_sampling_frequencies_follow_the_tempered_distribution() -> None:
    gen = torch.Generator().manual_seed(0)
    logits = torch.tensor([[2.0, 1.0, 0.0, -1.0]]).repeat(20000, 1)
    ids, _ = sample_rows(
        logits, torch.full((20000,), 0.5), torch.ones(20000), torch.rand(20000, generator=gen)
    )
    freq = torch.bincount(ids, minlength=4).double() / 20000
    expected = torch.softmax(torch.tensor([2.0, 1.0, 0.0, -1.0], dtype=torch.float64) / 0.5, dim=0)
    assert (freq - expected).abs().max().item() < 0.01


# ------------------------------------------------------------------ the KV cache


def _filled(values: list[list[float]]) -> GrowingCache:
    """A one-layer cache whose rows hold these key (= value) sequences, H = D = 1."""
    cache = GrowingCache()
    t = torch.tensor(values)[:, None, :, None]
    cache.update(t, t.clone(), 0)
    return cache


def test_growing_cache_appends_in_place_and_grows() -> None:
    cache = _filled([[1.0, 2.0]])
    layer = cache.layers[0]
    assert isinstance(layer, GrowingLayer)
    buf = layer.buf_k
    assert buf.shape[-2] == 2 + 64
    for i in range(64):
        cache.update(torch.full((1, 1, 1, 1), 3.0 + i), torch.zeros(1, 1, 1, 1), 0)
    assert layer.buf_k is buf  # 66 tokens fit: no reallocation
    cache.update(torch.full((1, 1, 1, 1), 99.0), torch.zeros(1, 1, 1, 1), 0)
    assert layer.buf_k.shape[-2] == 67 + 64 and cache.get_seq_length() == 67
    assert layer.keys[0, 0, :, 0].tolist() == [1.0, 2.0, *[3.0 + i for i in range(64)], 99.0]
    assert layer.values[0, 0, :, 0].tolist() == [1.0, 2.0, *[0.0] * 65]


def test_merge_and_select_rows_keep_rows_right_aligned() -> None:
    batch = _filled([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    merge_rows(batch, _filled([[7.0]]), width=3)
    merge_rows(batch, _filled([[8.0, 9.0, 10.0, 11.0]]), width=4)
    keys = batch.layers[0].keys[:, 0, :, 0].tolist()
    assert keys == [[0, 1, 2, 3], [0, 4, 5, 6], [0, 0, 0, 7], [8, 9, 10, 11]]
    select_rows(batch, [2, 0], cut=1)
    assert batch.layers[0].keys[:, 0, :, 0].tolist() == [[0, 0, 7], [1, 2, 3]]
    assert batch.layers[0].values[:, 0, :, 0].tolist() == [[0, 0, 7], [1, 2, 3]]
    assert batch.get_seq_length() == 3


# ------------------------------------------------------------------ log-prob fidelity and batching


async def test_single_request_logprobs_equal_teacher_forcing(model: Any) -> None:
    engine = HFEngine(model, None, seed=0)
    p = prompt(11)
    r = await engine.generate(p, SamplingParams(temperature=1.0, max_tokens=80))  # cache grows past 64
    await engine.close()
    assert (len(r.output_ids), r.finish_reason) == (80, "length")
    assert max_diff(model, p, r) < 1e-4
    assert r.meta == {"weights_version": 0, "prompt_tokens": 11, "cached_tokens": 0}


async def test_logprobs_are_tempered_and_untruncated_under_top_p(qwen: tuple[Any, Any]) -> None:
    model = qwen[0]
    engine = HFEngine(model, None)
    p = prompt(9)
    r = await engine.generate(p, SamplingParams(temperature=0.7, top_p=0.8, max_tokens=24, seed=3))
    await engine.close()
    assert max_diff(model, p, r, temperature=0.7) < 1e-4
    # every sampled token lies inside the top-p nucleus of the tempered distribution
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([p + r.output_ids])).logits[0, len(p) - 1 : -1]
    probs = torch.softmax(logits.float() / 0.7, dim=-1)
    for pos, tok in enumerate(r.output_ids):
        mass_before = probs[pos][probs[pos] > probs[pos, tok]].sum().item()
        assert mass_before < 0.8


async def test_concurrent_requests_of_different_lengths_and_late_joiners(model: Any) -> None:
    engine = HFEngine(model, None, seed=1)
    shapes = [(1, 40), (5, 7), (33, 25), (12, 3), (70, 18), (2, 30)]
    prompts = [prompt(n, i) for i, (n, _) in enumerate(shapes)]
    first = [
        asyncio.create_task(engine.generate(p, SamplingParams(max_tokens=m)))
        for p, (_, m) in zip(prompts, shapes, strict=True)
    ]
    await wait_for(lambda: engine.stats.decode_steps >= 3)
    late_prompts = [prompt(20, 7), prompt(4, 8)]
    late = [engine.generate(p, SamplingParams(max_tokens=10, temperature=0.9)) for p in late_prompts]
    results = await asyncio.gather(*first, *late)
    await engine.close()
    assert [len(r.output_ids) for r in results] == [40, 7, 25, 3, 18, 30, 10, 10]
    for p, r in zip(prompts, results[:6], strict=True):
        assert max_diff(model, p, r) < 1e-4
    for p, r in zip(late_prompts, results[6:], strict=True):
        assert max_diff(model, p, r, temperature=0.9) < 1e-4
    assert engine.stats.peak_batch >= 2
    assert engine.stats.joined_running_batch >= 2


async def test_greedy_batched_equals_unbatched(model: Any) -> None:
    engine = HFEngine(model, None)
    prompts = [prompt(n, i) for i, n in enumerate([3, 17, 40, 8, 25])]
    greedy = SamplingParams(temperature=0.0, max_tokens=20)
    alone = [await engine.generate(p, greedy) for p in prompts]
    together = await asyncio.gather(*[engine.generate(p, greedy) for p in prompts])
    await engine.close()
    assert [r.output_ids for r in together] == [r.output_ids for r in alone]
    for p, r in zip(prompts, together, strict=True):
        assert max_diff(model, p, r) < 1e-4  # greedy records temperature-1 log-probs
    assert engine.stats.peak_batch == 5


async def test_seeds_reproduce_inside_and_outside_a_batch(qwen: tuple[Any, Any]) -> None:
    engine = HFEngine(qwen[0], None)
    p = prompt(6)
    s = SamplingParams(max_tokens=12, seed=42)
    alone = await engine.generate(p, s)
    crowd = await asyncio.gather(
        engine.generate(prompt(30, 1), SamplingParams(max_tokens=15)),
        engine.generate(p, s),
        engine.generate(p, SamplingParams(max_tokens=12, seed=43)),
    )
    await engine.close()
    assert crowd[1].output_ids == alone.output_ids
    assert crowd[2].output_ids != alone.output_ids


async def test_stop_tokens_are_kept_and_max_tokens_cut(qwen: tuple[Any, Any]) -> None:
    engine = HFEngine(qwen[0], None)
    p = prompt(10)
    free = await engine.generate(p, SamplingParams(temperature=0.0, max_tokens=12))
    k = next(i for i in range(2, 12) if free.output_ids[i] not in free.output_ids[:i])
    stopped = await engine.generate(
        p, SamplingParams(temperature=0.0, max_tokens=12, stop_token_ids=(free.output_ids[k], 3))
    )
    short = await engine.generate(p, SamplingParams(temperature=0.0, max_tokens=4))
    one = await engine.generate(p, SamplingParams(temperature=0.0, max_tokens=1))
    await engine.close()
    assert (stopped.output_ids, stopped.finish_reason) == (free.output_ids[: k + 1], "stop")
    assert stopped.output_logprobs == pytest.approx(free.output_logprobs[: k + 1], abs=1e-5)
    assert (short.output_ids, short.finish_reason) == (free.output_ids[:4], "length")
    assert (one.output_ids, one.finish_reason) == (free.output_ids[:1], "length")


async def test_context_end_cuts_with_length(qwen: tuple[Any, Any]) -> None:
    engine = HFEngine(qwen[0], None, max_context=20)
    p = prompt(15)
    r = await engine.generate(p, SamplingParams(max_tokens=100))
    await engine.close()
    assert (len(r.output_ids), r.finish_reason) == (5, "length")
    assert max_diff(qwen[0], p, r) < 1e-4


async def test_max_batch_bounds_the_running_rows(qwen: tuple[Any, Any]) -> None:
    engine = HFEngine(qwen[0], None, max_batch=2)
    prompts = [prompt(5 + i, i) for i in range(5)]
    results = await asyncio.gather(*[engine.generate(p, SamplingParams(max_tokens=6)) for p in prompts])
    await engine.close()
    assert engine.stats.peak_batch == 2
    assert engine.stats.prefills == 5
    for p, r in zip(prompts, results, strict=True):
        assert max_diff(qwen[0], p, r) < 1e-4


# ------------------------------------------------------------------ prefix cache


def test_prefix_cache_store_lookup_and_eviction() -> None:
    def kv(n: int, fill: float) -> list[tuple[torch.Tensor, torch.Tensor]]:
        t = torch.full((1, 1, n, 1), fill)
        return [(t, t.clone())]

    assert common_prefix(torch.tensor([1, 2, 3]), torch.tensor([1, 2, 4, 5])) == 2
    assert common_prefix(torch.tensor([1, 2]), torch.tensor([1, 2, 4])) == 2
    cache = PrefixCache(max_tokens=30, min_match=2)
    cache.insert(list(range(10)), kv(10, 1.0))
    cache.insert(list(range(12)), kv(12, 2.0))  # extends the first entry: replaces it
    assert (len(cache), cache.tokens) == (1, 12)
    hit = cache.lookup([*range(5), 99, 98])
    assert hit is not None and hit[0] == 5 and hit[1][0][0].shape == (1, 1, 5, 1)
    assert hit[1][0][0].flatten().tolist() == [2.0] * 5
    hit = cache.lookup(list(range(12)))
    assert hit is not None and hit[0] == 11  # the last prompt token is always fed
    assert cache.lookup([0, 7, 7]) is None  # 1 common token < min_match
    cache.insert([50 + i for i in range(10)], kv(10, 3.0))
    cache.insert([80 + i for i in range(10)], kv(10, 4.0))  # 32 tokens > 30: the oldest goes
    assert (len(cache), cache.tokens) == (2, 20)
    assert cache.lookup(list(range(12))) is None
    cache.clear()
    assert (len(cache), cache.tokens) == (0, 0)


async def test_agent_turns_reuse_the_previous_call(model: Any) -> None:
    engine = HFEngine(model, None)
    p1 = prompt(30)
    r1 = await engine.generate(p1, SamplingParams(max_tokens=20))
    p2 = p1 + r1.output_ids + prompt(10, 5)  # the harness sends history + a tool result
    r2 = await engine.generate(p2, SamplingParams(max_tokens=15))
    r3 = await engine.generate(p1, SamplingParams(max_tokens=5))  # a GRPO sibling: same first prompt
    await engine.close()
    assert (r1.meta["cached_tokens"], r2.meta["cached_tokens"], r3.meta["cached_tokens"]) == (0, 49, 29)
    assert engine.stats.prefill_tokens == 30 + (60 - 49) + 1
    for p, r in ((p1, r1), (p2, r2), (p1, r3)):
        assert max_diff(model, p, r) < 1e-4


async def test_prefix_cache_is_dropped_on_weight_update_and_can_be_disabled(qwen: tuple[Any, Any]) -> None:
    engine = HFEngine(copy.deepcopy(qwen[0]), None)
    p = prompt(20)
    await engine.generate(p, SamplingParams(max_tokens=3))
    other, _ = tiny_qwen3(seed=1)
    await engine.update_weights(other.state_dict())
    after = await engine.generate(p, SamplingParams(max_tokens=3))
    await engine.close()
    assert after.meta["cached_tokens"] == 0
    assert max_diff(other, p, after) < 1e-4
    off = HFEngine(qwen[0], None, prefix_cache_tokens=0)
    await off.generate(p, SamplingParams(max_tokens=3))
    again = await off.generate(p, SamplingParams(max_tokens=3))
    await off.close()
    assert again.meta["cached_tokens"] == 0


# ------------------------------------------------------------------ weights


async def test_update_weights_changes_outputs_and_version(qwen: tuple[Any, Any]) -> None:
    model = copy.deepcopy(qwen[0])
    engine = HFEngine(model, None)
    p, greedy = prompt(8), SamplingParams(temperature=0.0, max_tokens=10)
    before = await engine.generate(p, greedy)
    other, _ = tiny_qwen3(seed=1)
    await engine.update_weights(other.state_dict())
    after = await engine.generate(p, greedy)
    await engine.close()
    assert engine.weights_version == 1
    assert (before.meta["weights_version"], after.meta["weights_version"]) == (0, 1)
    assert after.output_ids != before.output_ids
    assert max_diff(other, p, after) < 1e-4


async def test_update_waits_for_running_requests(qwen: tuple[Any, Any]) -> None:
    old = qwen[0]
    engine = HFEngine(copy.deepcopy(old), None)
    new, _ = tiny_qwen3(seed=2)
    order: list[str] = []

    async def run(name: str, p: list[int], n: int) -> GenerationResult:
        r = await engine.generate(p, SamplingParams(max_tokens=n))
        order.append(name)
        return r

    async def update() -> None:
        await engine.update_weights(new.state_dict())
        order.append("update")

    long = asyncio.create_task(run("long", prompt(6), 60))
    await wait_for(lambda: engine.stats.decode_steps >= 2)
    upd = asyncio.create_task(update())
    await asyncio.sleep(0.01)
    after = asyncio.create_task(run("after", prompt(6, 1), 5))
    r_long, _, r_after = await asyncio.gather(long, upd, after)
    await engine.close()
    assert order == ["long", "update", "after"]
    assert r_long.meta["weights_version"] == 0 and max_diff(old, prompt(6), r_long) < 1e-4
    assert r_after.meta["weights_version"] == 1 and max_diff(new, prompt(6, 1), r_after) < 1e-4


async def test_bad_state_dict_changes_nothing(qwen: tuple[Any, Any]) -> None:
    engine = HFEngine(copy.deepcopy(qwen[0]), None)
    p, greedy = prompt(8), SamplingParams(temperature=0.0, max_tokens=6)
    before = await engine.generate(p, greedy)
    bad = {"model.norm.weight": torch.zeros(64), "module.lm_head.weight": torch.zeros(3)}
    with pytest.raises(EngineError, match=r"unknown names \['module.lm_head.weight'\]"):
        await engine.update_weights(bad)
    with pytest.raises(EngineError, match=r"wrong shapes \['model.norm.weight'\]"):
        await engine.update_weights({"model.norm.weight": torch.zeros(65)})
    with pytest.raises(EngineError, match="update_weights failed"):
        await engine.update_weights({"model.norm.weight": [1.0] * 64})
    after = await engine.generate(p, greedy)
    await engine.close()
    assert engine.weights_version == 0
    assert after.output_ids == before.output_ids


# ------------------------------------------------------------------ errors, cancellation, close


async def test_bad_requests_fail_alone(qwen: tuple[Any, Any]) -> None:
    model = copy.deepcopy(qwen[0])
    poison = 7777

    def hook(_module: Any, args: tuple[torch.Tensor, ...]) -> None:
        if (args[0] == poison).any():
            raise RuntimeError("injected fault")

    model.model.embed_tokens.register_forward_pre_hook(hook)
    engine = HFEngine(model, None, max_context=64)
    good = prompt(10)
    results = await asyncio.gather(
        engine.generate(good, SamplingParams(max_tokens=8, seed=1)),
        engine.generate(prompt(64), SamplingParams(max_tokens=8)),
        engine.generate([5, 151936], SamplingParams(max_tokens=8)),
        engine.generate([], SamplingParams(max_tokens=8)),
        engine.generate([5, poison, 6], SamplingParams(max_tokens=8)),
        engine.generate(good, SamplingParams(max_tokens=0)),
        engine.generate(good, SamplingParams(max_tokens=8, seed=1)),
        return_exceptions=True,
    )
    await engine.close()
    assert isinstance(results[0], GenerationResult) and isinstance(results[6], GenerationResult)
    assert results[0].output_ids == results[6].output_ids
    errors = [str(e) for e in results[1:6]]
    assert all(isinstance(e, EngineError) for e in results[1:6])
    assert "prompt of 64 tokens leaves no room in the context of 64" in errors[0]
    assert "outside the vocabulary (size 151936): [151936]" in errors[1]
    assert errors[2] == "empty prompt"
    assert errors[3] == "prefill failed: RuntimeError: injected fault"
    assert errors[4] == "max_tokens must be at least 1, got 0"


async def test_cancelled_request_leaves_the_batch(qwen: tuple[Any, Any]) -> None:
    engine = HFEngine(qwen[0], None)
    doomed = asyncio.create_task(engine.generate(prompt(5), SamplingParams(max_tokens=1000)))
    kept = asyncio.create_task(engine.generate(prompt(7, 1), SamplingParams(max_tokens=30)))
    await wait_for(lambda: engine.stats.decode_steps >= 3)
    doomed.cancel()
    r = await kept
    with pytest.raises(asyncio.CancelledError):
        await doomed
    await wait_for(lambda: not engine._batch.rows)
    steps = engine.stats.decode_steps
    await engine.close()
    assert steps < 40  # the cancelled row stopped with the other one, not after 1000 tokens
    assert max_diff(qwen[0], prompt(7, 1), r) < 1e-4


async def test_close_fails_running_and_later_requests(qwen: tuple[Any, Any]) -> None:
    engine = HFEngine(qwen[0], None)
    running = asyncio.create_task(engine.generate(prompt(5), SamplingParams(max_tokens=100000)))
    await wait_for(lambda: engine.stats.decode_steps >= 1)
    await engine.close()
    with pytest.raises(EngineError, match="engine is closed"):
        await running
    with pytest.raises(EngineError, match="engine is closed"):
        await engine.generate(prompt(5), SamplingParams())
    await engine.close()  # idempotent


class _BrokenLoopEngine(HFEngine):
    """A fake with a bug in its scheduling loop (not in a request): the worker must not hang callers."""

    def _admit(self) -> None:
        if any(getattr(item, "max_tokens", 0) == 13 for item in self._pending):
            raise ValueError("scheduler bug")
        super()._admit()


async def test_worker_crash_fails_callers_instead_of_hanging(qwen: tuple[Any, Any]) -> None:
    engine = _BrokenLoopEngine(qwen[0], None)
    ok = await engine.generate(prompt(4), SamplingParams(max_tokens=3))
    with pytest.raises(EngineError, match="engine worker crashed: ValueError: scheduler bug"):
        await engine.generate(prompt(4), SamplingParams(max_tokens=13))
    with pytest.raises(EngineError, match="engine is closed"):
        await engine.generate(prompt(4), SamplingParams(max_tokens=3))
    await engine.close()
    assert len(ok.output_ids) == 3


# ------------------------------------------------------------------ registry


def test_registry_names() -> None:
    assert sorted(ENGINES) == ["hf", "scripted", "vllm"]
    no_env = VLLMConfig(python="/nonexistent/vllm-env/bin/python")
    with pytest.raises(EngineError, match="no vLLM environment at /nonexistent/vllm-env/bin/python"):
        build_engine(EngineConfig(type="vllm", vllm=no_env))
    with pytest.raises(EngineError, match=r"needs engine\.script"):
        build_engine(EngineConfig(type="scripted", model="tiny-qwen3"))


async def test_registry_builds_hf_from_config() -> None:
    engine = build_engine(EngineConfig(type="hf", model="tiny-qwen3", max_batch=3, prefix_cache_tokens=100))
    assert isinstance(engine, HFEngine) and isinstance(engine, Engine)
    assert (engine.max_batch, engine._prefix.max_tokens) == (3, 100)
    assert engine.tokenizer.convert_tokens_to_ids("<|im_end|>") == 151645
    r = await engine.generate([14990, 1879], SamplingParams(max_tokens=4))
    await engine.close()
    assert (len(r.output_ids), r.finish_reason) == (4, "length")


async def test_registry_builds_scripted_from_a_script_file(tmp_path: Path) -> None:
    script = tmp_path / "turns.json"
    script.write_text(json.dumps(["hello world", {"content": "done"}]))
    engine = build_engine(EngineConfig(type="scripted", model="tiny-qwen3", script=str(script)))
    tok = engine.tokenizer
    first = await engine.generate(
        tok.encode("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"), SamplingParams()
    )
    await engine.close()
    assert tok.decode(first.output_ids) == "hello world<|im_end|>"
    assert first.output_logprobs == [0.0] * len(first.output_ids)


async def test_registry_bfloat16_engine_runs_and_stays_close_to_teacher_forcing() -> None:
    engine = build_engine(EngineConfig(type="hf", model="tiny-qwen3", dtype="bfloat16"))
    assert isinstance(engine, HFEngine)
    p = prompt(12)
    calls = [engine.generate(p, SamplingParams(max_tokens=10, seed=s)) for s in range(3)]
    results = await asyncio.gather(*calls)
    await engine.close()
    assert engine.model.lm_head.weight.dtype == torch.bfloat16
    for r in results:
        assert len(r.output_ids) == 10
        assert max_diff(engine.model, p, r) < 0.05  # ~0.01 seen: bf16 rounds batched and solo passes apart
