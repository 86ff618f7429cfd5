"""Decode throughput of the embedded engine: 1 request alone vs N concurrent (continuous batching).

    OMP_NUM_THREADS=2 .venv/bin/python benchmarks/engine_hf.py --model default --concurrency 1 8

Every request is the same chat prompt with a different seed, sampled at temperature 1 for exactly
`--tokens` tokens (no stop ids), so each configuration generates the same number of tokens per request.
Prints generated tokens per second (wall clock, prefill included) and the ratio to the first setting.
"""

from __future__ import annotations

import argparse
import asyncio
import time

import torch

from harnessrl.engines.hf import HFEngine
from harnessrl.engines.models import load_model, load_tokenizer
from harnessrl.protocols import SamplingParams


async def run(engine: HFEngine, prompt: list[int], n: int, tokens: int) -> tuple[float, int]:
    start = time.perf_counter()
    results = await asyncio.gather(
        *[engine.generate(prompt, SamplingParams(max_tokens=tokens, seed=i)) for i in range(n)]
    )
    return time.perf_counter() - start, sum(len(r.output_ids) for r in results)


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="default", help="default | tiny-qwen3 | checkpoint folder")
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 8])
    ap.add_argument("--tokens", type=int, default=64, help="tokens generated per request")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--repeat", type=int, default=1, help="repeat the user text (long prompts)")
    args = ap.parse_args()

    t0 = time.perf_counter()
    model = load_model(args.model, device=args.device)
    tok = load_tokenizer(args.model)
    secs = time.perf_counter() - t0
    print(f"model {args.model}: loaded in {secs:.2f} s, torch threads {torch.get_num_threads()}")
    text = " ".join(["Write a short story about a robot learning to paint."] * args.repeat)
    ids = tok.apply_chat_template(
        [{"role": "user", "content": text}],
        add_generation_prompt=True,
    )
    prompt = list(ids["input_ids"] if hasattr(ids, "keys") else ids)
    engine = HFEngine(model, tok, max_batch=max(args.concurrency))
    await run(engine, prompt, 1, 4)  # warm-up
    base = None
    print(f"prompt {len(prompt)} tokens, {args.tokens} generated per request")
    print(f"{'concurrent':>10} {'tokens':>7} {'seconds':>8} {'tok/s':>8} {'vs first':>8}")
    for n in args.concurrency:
        secs, count = await run(engine, prompt, n, args.tokens)
        rate = count / secs
        base = base or rate
        print(f"{n:>10} {count:>7} {secs:>8.2f} {rate:>8.1f} {rate / base:>7.2f}x")
    await engine.close()


if __name__ == "__main__":
    asyncio.run(main())
