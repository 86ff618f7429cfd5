"""vLLM's sampling log-probs vs the trainer's recomputation, per dtype: mean and max |diff|.

    .venv/bin/python benchmarks/vllm_logprobs.py                      # SmolLM2-135M, fp32 and bf16
    .venv/bin/python benchmarks/vllm_logprobs.py --dtypes float32 --prompts 4 --tokens 32

For each dtype a managed vLLM server (`engines/vllm.py`, the environment of `scripts/setup_vllm`)
samples `--tokens` tokens for each of `--prompts` chat prompts at temperature `--temperature`; the
trainer side then recomputes the log-prob of every sampled token by teacher forcing
(`models.teacher_force_logprobs`, the computation the trainer's packed forward does) with the model
in float32 and in the same dtype as the server. The baseline is the float32 recomputation; the
mismatch is what truncated importance sampling sees as off-policy noise. Prints one line per
(server dtype, trainer dtype) pair: tokens compared, mean |diff|, max |diff|, and the mean of
exp(diff) - 1 (the average importance-ratio error).
"""

from __future__ import annotations

import argparse
import asyncio
import math
import tempfile
import time
from pathlib import Path
from typing import Any

from harnessrl.engines.models import default_checkpoint, load_model, load_tokenizer, teacher_force_logprobs
from harnessrl.engines.vllm import VLLMEngine
from harnessrl.engines.vllm_server import ServerSpec, VLLMServer
from harnessrl.protocols import SamplingParams

TEXTS = [
    "Write a short story about a robot learning to paint.",
    "List the files you would create for a small Python CLI that counts words.",
    "Explain what a prefix tree is in two sentences.",
    "Fix this shell command: grep -r 'TODO' . | wc",
    "What is 17 times 23? Show your working.",
    "Describe the water cycle for a ten-year-old.",
    "Write a bash one-liner that prints the five largest files in a folder.",
    "Translate 'the cat sleeps on the warm mat' into French.",
]


async def sample(server: VLLMServer, tok: Any, prompts: list[list[int]], args: Any) -> list[Any]:
    engine = VLLMEngine(server.url, tok)
    try:
        calls = [
            engine.generate(p, SamplingParams(temperature=args.temperature, max_tokens=args.tokens, seed=i))
            for i, p in enumerate(prompts)
        ]
        return list(await asyncio.gather(*calls))
    finally:
        await engine.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dtypes", nargs="+", default=["float32", "bfloat16"])
    ap.add_argument("--prompts", type=int, default=8)
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--temperature", type=float, default=1.0)
    args = ap.parse_args()
    folder = default_checkpoint()
    tok = load_tokenizer("default")
    prompts = []
    for text in (TEXTS * 4)[: args.prompts]:
        ids = tok.apply_chat_template([{"role": "user", "content": text}], add_generation_prompt=True)
        prompts.append(list(ids["input_ids"] if hasattr(ids, "keys") else ids))
    trainers = {d: load_model("default", dtype=d) for d in dict.fromkeys(["float32", *args.dtypes])}
    print(f"SmolLM2-135M-Instruct, {args.prompts} prompts x {args.tokens} tokens, T={args.temperature}")
    head = f"{'vllm dtype':>10} {'trainer':>9} {'tokens':>7} {'mean|d|':>9} {'max|d|':>9}"
    print(f"{head} {'mean ratio err':>14}")
    for dtype in args.dtypes:
        t0 = time.perf_counter()
        log = Path(tempfile.mkdtemp(prefix="vllm-logprobs-")) / "server.log"
        server = VLLMServer.start(ServerSpec(folder, dtype=dtype, max_model_len=2048), log)
        try:
            results = asyncio.run(sample(server, tok, prompts, args))
        finally:
            server.stop()
        print(f"  (vLLM {dtype}: started and sampled in {time.perf_counter() - t0:.0f} s)", flush=True)
        for tdtype in dict.fromkeys(["float32", dtype]):
            diffs: list[float] = []
            for prompt, res in zip(prompts, results, strict=True):
                ref = teacher_force_logprobs(trainers[tdtype], prompt, res.output_ids, args.temperature)
                diffs += [a - b for a, b in zip(res.output_logprobs, ref, strict=True)]
            absd = [abs(d) for d in diffs]
            ratio = sum(abs(math.exp(d) - 1) for d in diffs) / len(diffs)
            mean = sum(absd) / len(absd)
            line = f"{dtype:>10} {tdtype:>9} {len(diffs):>7} {mean:>9.2e} {max(absd):>9.2e} {ratio:>14.2e}"
            print(line, flush=True)


if __name__ == "__main__":
    main()
