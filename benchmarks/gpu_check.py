"""One-GPU check (run by `benchmarks/gpu_check.sh`): trainer and embedded-engine throughput, one table.

    python benchmarks/gpu_check.py                    # cuda, Qwen3-0.6B shape, bf16; < 6 minutes on an H200
    python benchmarks/gpu_check.py --tiny --device cpu   # a 2-layer toy of the same code path (dry run)

The model is a Qwen3 built from config with random weights (no download): the Qwen3-0.6B shape
(28 layers, hidden 1024, 16 heads / 8 KV heads, head_dim 128, MLP 3072, 151936-token tied vocabulary;
0.6B parameters, 0.44B of them outside the embedding). Rows:

- trainer tree sdpa: one optimizer step (forward + backward + AdamW) over ONE tree-packed row of a
  rollout-shaped tree (`rl.synthetic.rollout_tree`: a long shared prefix, agent turns, leaves
  branching off late turns), dense tree mask through SDPA.
- trainer tree flex: the same, FlexAttention with the tree BlockMask (compiled on first use; the
  compile is in the warm-up, not the timing).
- trainer tree chunked: the same, chunked tree attention (`rl.tree_attention`: each chunk of query
  rows through SDPA against only its ancestor keys; the CPU default's contender).
- trainer paths sdpa: the same tree trained path by path (each root-to-leaf path its own causal
  sequence, shared tokens recomputed): the baseline the tree packing replaces.
- engine c=1 / c=16: the embedded engine (`engines/hf.py`) generating `--gen-tokens` tokens per
  request at temperature 1, 1 request alone vs 16 concurrent (continuous batching).

tokens/s counts the tokens of the tree (unique tokens) for every trainer row, so the three rows are
the same work; "processed" says how many tokens each actually ran through the model. MFU = model
FLOPs / time / peak (`--peak-tflops`, default 989: H200 dense bf16), model FLOPs = 6 x (parameters
outside the embedding x processed tokens + vocabulary x hidden x trained tokens: the LM head runs only
where a trained token is predicted), attention FLOPs left out (they matter at long prefixes: MFU here
is a lower bound). Times are wall
clock after `torch.cuda.synchronize()`, median of `--repeats`, after one warm-up each.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from harnessrl.engines.hf import HFEngine
from harnessrl.protocols import SamplingParams
from harnessrl.rl.forward import packed_forward, set_attention, token_logprobs
from harnessrl.rl.packing import TreeLayout, layout_tree, pack
from harnessrl.rl.synthetic import rollout_tree

QWEN3_06B = {
    "vocab_size": 151936, "hidden": 1024, "layers": 28, "heads": 16, "kv_heads": 8,
    "head_dim": 128, "mlp": 3072,
}  # fmt: skip
TINY = {"vocab_size": 4096, "hidden": 64, "layers": 2, "heads": 4, "kv_heads": 2, "head_dim": 16, "mlp": 128}


@dataclass
class Row:
    label: str
    tokens: int
    """Work done: unique tree tokens (trainer rows) or generated tokens (engine rows)."""
    processed: int
    """Tokens actually run through the model."""
    seconds: float
    flops: float | None
    """Model FLOPs of a trainer row (None for engine rows)."""


def build_model(shape: dict[str, int], device: str, dtype: torch.dtype) -> Any:
    from transformers import AutoModelForCausalLM, Qwen3Config

    cfg = Qwen3Config(
        vocab_size=shape["vocab_size"],
        hidden_size=shape["hidden"],
        intermediate_size=shape["mlp"],
        num_hidden_layers=shape["layers"],
        num_attention_heads=shape["heads"],
        num_key_value_heads=shape["kv_heads"],
        head_dim=shape["head_dim"],
        max_position_embeddings=40960,
        tie_word_embeddings=True,
    )
    torch.manual_seed(0)
    with torch.device(device):  # initialise on the device: a 0.6B init on the host takes ~20 s
        model = AutoModelForCausalLM.from_config(cfg, attn_implementation="sdpa", dtype=dtype)
    return model


def sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def timed(fn: Callable[[], None], device: str, repeats: int) -> float:
    """Median wall seconds of `fn` over `repeats` runs, after one warm-up."""
    fn()
    sync(device)
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        sync(device)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def tree_step(model: Any, opt: torch.optim.Optimizer, layout: TreeLayout, attention: str) -> None:
    set_attention(model, attention)  # type: ignore[arg-type]
    opt.zero_grad(set_to_none=True)
    packed_forward(model, pack([layout], [0]), attention=attention).logprobs.sum().backward()  # type: ignore[arg-type]
    opt.step()


def paths_step(model: Any, opt: torch.optim.Optimizer, layout: TreeLayout, device: str) -> None:
    set_attention(model, "sdpa")
    opt.zero_grad(set_to_none=True)
    for toks in layout.path_tokens:
        ids = layout.input_ids[toks].to(device)
        trained = layout.loss_mask[toks]
        hidden = model.get_decoder()(input_ids=ids[None], use_cache=False).last_hidden_state[0]
        pos = torch.nonzero(trained[1:]).flatten().to(device) + 1
        logp, _ = token_logprobs(model, hidden[pos - 1], ids[pos])
        logp.sum().backward()
    opt.step()


async def generation(model: Any, device: str, n: int, tokens: int, prompt_len: int) -> tuple[int, float]:
    engine = HFEngine(model, None, max_batch=max(n, 1), prefix_cache_tokens=0)
    prompt = [random.Random(1).randrange(1000) for _ in range(prompt_len)]
    try:
        await engine.generate(prompt, SamplingParams(max_tokens=4, seed=0))  # warm-up
        sync(device)
        t = time.perf_counter()
        results = await asyncio.gather(
            *[engine.generate(prompt, SamplingParams(max_tokens=tokens, seed=i)) for i in range(n)]
        )
        sync(device)
        return sum(len(r.output_ids) for r in results), time.perf_counter() - t
    finally:
        await engine.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--tiny", action="store_true", help="a 2-layer toy model and small tree (dry run)")
    ap.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float32"])
    ap.add_argument("--leaves", type=int, default=8)
    ap.add_argument("--prefix", type=int, default=4096, help="shared prefix tokens (system prompt, tools)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--gen-tokens", type=int, default=128)
    ap.add_argument("--peak-tflops", type=float, default=989.0)
    ap.add_argument("--skip-flex", action="store_true", help="FlexAttention needs a compiler toolchain")
    args = ap.parse_args()
    turn = (64, 512) if not args.tiny else (4, 16)
    if args.tiny:
        args.prefix, args.gen_tokens, args.repeats = min(args.prefix, 256), min(args.gen_tokens, 8), 1
    shape = TINY if args.tiny else QWEN3_06B
    dtype = torch.bfloat16 if args.dtype == "bfloat16" else torch.float32
    t0 = time.perf_counter()
    model = build_model(shape, args.device, dtype)
    n_params = sum(p.numel() for p in model.parameters())
    name = torch.cuda.get_device_name() if args.device.startswith("cuda") else args.device
    print(f"device {name}; torch {torch.__version__}; model Qwen3 {shape}; {n_params / 1e6:.1f}M params")
    sample = rollout_tree(
        random.Random(0),
        vocab=shape["vocab_size"],
        leaves=args.leaves,
        prefix=args.prefix,
        turns=(4, 8),
        branch_turns=(1, 2),
        env_tokens=turn,
        out_tokens=(turn[0] // 2, turn[1] // 2),
    )
    layout = layout_tree(sample)
    unique = layout.num_tokens
    path_tokens = sum(len(t) for t in layout.path_tokens)
    print(f"tree: {args.leaves} leaves, {unique} unique tokens, {path_tokens} path-by-path tokens")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-6, foreach=True)
    rows: list[Row] = []
    n_head = shape["vocab_size"] * shape["hidden"]
    n_body = n_params - n_head  # tied embeddings: the head is the embedding matrix
    trained_tree = int(layout.loss_mask.sum())
    trained_paths = sum(int(layout.loss_mask[t][1:].sum()) for t in layout.path_tokens)

    def trainer_row(label: str, fn: Callable[[], None], processed: int, trained: int) -> None:
        secs = timed(fn, args.device, args.repeats)
        flops = 6.0 * (n_body * processed + n_head * trained)
        rows.append(Row(label, unique, processed, secs, flops))
        print(f"  {label}: {secs:.3f} s", flush=True)

    trainer_row("trainer tree sdpa", lambda: tree_step(model, opt, layout, "sdpa"), unique, trained_tree)
    if not args.skip_flex:
        trainer_row("trainer tree flex", lambda: tree_step(model, opt, layout, "flex"), unique, trained_tree)
    trainer_row("trainer tree chunked", lambda: tree_step(model, opt, layout, "tree"), unique, trained_tree)
    trainer_row(
        "trainer paths sdpa", lambda: paths_step(model, opt, layout, args.device), path_tokens, trained_paths
    )
    opt.zero_grad(set_to_none=True)
    opt.state.clear()  # free the moments before the engine rows
    set_attention(model, "sdpa")
    model.eval()
    for n in (1, 16):
        count, secs = asyncio.run(generation(model, args.device, n, args.gen_tokens, min(args.prefix, 1024)))
        rows.append(Row(f"engine c={n}", count, count, secs, None))
        print(f"  engine c={n}: {count} tokens in {secs:.2f} s", flush=True)
    print_table(rows, args.peak_tflops)
    print(f"total {time.perf_counter() - t0:.0f} s")


def print_table(rows: list[Row], peak_tflops: float) -> None:
    """One markdown table; each row's rate also as a ratio to the first row of its kind."""
    base: dict[bool, float] = {}
    print("\n| row | tokens | processed | seconds | tokens/s | MFU | vs first of its kind |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        rate = r.tokens / r.seconds
        kind = r.flops is not None
        base.setdefault(kind, rate)
        mfu = f"{r.flops / r.seconds / (peak_tflops * 1e12):.1%}" if r.flops is not None else "-"
        cells = [r.label, str(r.tokens), str(r.processed), f"{r.seconds:.3f}", f"{rate:,.0f}", mfu]
        print("| " + " | ".join(cells) + f" | {rate / base[kind]:.2f}x |")


if __name__ == "__main__":
    main()
