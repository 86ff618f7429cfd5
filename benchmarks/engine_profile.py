"""Where a decoding step of the embedded engine (`engines/hf.py`) goes, against the bare model.

    python benchmarks/engine_profile.py                        # cuda, the Qwen3-0.6B shape of gpu_check
    python benchmarks/engine_profile.py --tiny --device cpu    # the same code on a 2-layer toy

`gpu_check` measured ~70 ms a decoding step on an H200 at 1 and at 16 rows: far above the GPU time of
a 0.6B model's step. This splits one step, milliseconds per step (median over `--steps` steps, each
part timed with the device synchronised around it, so the parts add up to the step):

- bare DynamicCache / bare GrowingCache: the model's forward alone, one token a step on a grown cache,
  transformers' own cache vs the engine's (`engines/kv_cache.py`); no engine.
- engine step, and its parts: inputs (`_Batch.step_inputs`), forward (`HFEngine._forward`), sample
  (`HFEngine._sample`: the draw and the host copies), the rest (bookkeeping, futures).

Then torch.profiler's twelve most expensive operators of a few bare GrowingCache steps (the
engine's forward), by self CPU time and by device time. Ratios are against the bare DynamicCache
forward of the same batch.
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import random
import statistics
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import torch
from gpu_check import QWEN3_06B, TINY, build_model, sync

from harnessrl.engines.hf import HFEngine, _Batch
from harnessrl.engines.kv_cache import GrowingCache
from harnessrl.protocols import SamplingParams


def bare_steps(model: Any, device: str, rows: int, prompt: int, steps: int, cache: Any) -> list[float]:
    """Seconds of each one-token forward of `rows` rows after a `prompt`-token prefill."""
    kw = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
    ids = torch.randint(0, 1000, (rows, prompt), device=device)
    out = model(input_ids=ids, use_cache=True, logits_to_keep=1, **{kw: cache})
    nxt = out.logits[:, -1].argmax(-1, keepdim=True)
    times = []
    for i in range(steps):
        sync(device)
        t = time.perf_counter()
        pos = torch.full((rows, 1), prompt + i, device=device)
        out = model(input_ids=nxt, position_ids=pos, use_cache=True, logits_to_keep=1, **{kw: cache})
        nxt = out.logits[:, -1].argmax(-1, keepdim=True)
        sync(device)
        times.append(time.perf_counter() - t)
    return times


@contextmanager
def timing(parts: dict[str, list[float]], device: str) -> Iterator[None]:
    """Time `HFEngine._forward`, `_sample`, `_Batch.step_inputs` and `_decode_step` (device synced)."""
    saved: list[tuple[Any, str, Any]] = []

    def wrap(owner: Any, name: str, label: str) -> None:
        fn = getattr(owner, name)

        def timed(*a: Any, **k: Any) -> Any:
            sync(device)
            t = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                sync(device)
                parts[label].append(time.perf_counter() - t)

        saved.append((owner, name, fn))
        setattr(owner, name, timed)

    wrap(HFEngine, "_decode_step", "engine step")
    wrap(HFEngine, "_forward", "forward")
    wrap(HFEngine, "_sample", "sample")
    wrap(_Batch, "step_inputs", "inputs")
    try:
        yield
    finally:
        for owner, name, fn in saved:
            setattr(owner, name, fn)


async def engine_run(model: Any, rows: int, prompt: int, tokens: int) -> None:
    engine = HFEngine(model, None, max_batch=rows, prefix_cache_tokens=0)
    ids = [random.Random(1).randrange(1000) for _ in range(prompt)]
    try:
        await asyncio.gather(
            *[engine.generate(ids, SamplingParams(max_tokens=tokens, seed=i)) for i in range(rows)]
        )
    finally:
        await engine.close()


def engine_parts(model: Any, device: str, rows: int, prompt: int, steps: int) -> dict[str, float]:
    """Median ms per decoding step of each part (prefill steps excluded: forward calls of one row
    with the prompt are dropped by keeping only the last `steps - 1` calls of each part)."""
    asyncio.run(engine_run(model, rows, prompt, 4))  # warm-up
    parts: dict[str, list[float]] = defaultdict(list)
    with timing(parts, device):
        asyncio.run(engine_run(model, rows, prompt, steps))
    n = len(parts["engine step"])
    med = {k: 1e3 * statistics.median(v[-n:]) for k, v in parts.items()}
    med["rest"] = med["engine step"] - med["forward"] - med["sample"] - med["inputs"]
    return med


def profile_table(model: Any, device: str, rows: int, prompt: int, steps: int) -> None:
    """torch.profiler over bare GrowingCache steps (the engine's forward, on this thread: the profiler
    does not see the engine's worker thread)."""
    from torch.profiler import ProfilerActivity, profile

    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.startswith("cuda") else [])
    with torch.inference_mode(), profile(activities=acts) as prof:
        bare_steps(model, device, rows, prompt, steps, GrowingCache())
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=12, max_name_column_width=48))
    if device.startswith("cuda"):
        print(
            prof.key_averages().table(sort_by="self_cuda_time_total", row_limit=12, max_name_column_width=48)
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--tiny", action="store_true")
    ap.add_argument("--prompt", type=int, default=1024)
    ap.add_argument("--steps", type=int, default=48)
    ap.add_argument("--rows", type=int, nargs="+", default=[1, 16])
    args = ap.parse_args()
    from transformers import DynamicCache

    if args.tiny:
        args.prompt, args.steps = min(args.prompt, 128), min(args.steps, 12)
    model = build_model(TINY if args.tiny else QWEN3_06B, args.device, torch.bfloat16).eval()
    name = torch.cuda.get_device_name() if args.device.startswith("cuda") else args.device
    print(f"device {name}; torch {torch.__version__}; prompt {args.prompt}; {args.steps} steps")
    print("| rows | part | ms per step | vs bare DynamicCache |\n|---|---|---|---|")
    for rows in args.rows:
        with torch.inference_mode():
            bare_steps(model, args.device, rows, args.prompt, 4, DynamicCache())  # warm-up
            cases: dict[str, Callable[[], Any]] = {
                "bare DynamicCache": DynamicCache,
                "bare GrowingCache": GrowingCache,
            }
            ms = {
                k: 1e3 * statistics.median(bare_steps(model, args.device, rows, args.prompt, args.steps, c()))
                for k, c in cases.items()
            }
        ms |= engine_parts(model, args.device, rows, args.prompt, args.steps)
        base = ms["bare DynamicCache"]
        for part in (
            "bare DynamicCache",
            "bare GrowingCache",
            "engine step",
            "inputs",
            "forward",
            "sample",
            "rest",
        ):
            print(f"| {rows} | {part} | {ms[part]:.2f} | {ms[part] / base:.2f}x |")
    profile_table(model, args.device, args.rows[0], args.prompt, min(args.steps, 16))


if __name__ == "__main__":
    main()
