"""The one cache root: downloaded harnesses, converted models and the sandbox agent environment.

    cache_root() / "harnesses"     npm installs of the harness CLIs (`harnesses/install.py`)
    cache_root() / "models"        converted model checkpoints (`engines/models.py`)
    cache_root() / "agent-env"     the sandbox's python tree (`sandbox/agent_env.py`, `scripts/agent_env`)
    cache_root() / "runtimes"      the Python 3.13 runtime some PyPI harnesses run on (`images/runtime.py`)

`$HARNESSRL_CACHE` when set; else `.cache` of the checkout this package runs from; else
`~/.cache/harnessrl` (an installed package).
"""

from __future__ import annotations

import os
from pathlib import Path


def checkout_root() -> Path | None:
    """The source checkout this package runs from (`pyproject.toml` beside `src/`), None when installed."""
    repo = Path(__file__).resolve().parents[2]
    return repo if (repo / "pyproject.toml").is_file() else None


def cache_root() -> Path:
    """Root of every harnessrl cache (module docstring)."""
    env = os.environ.get("HARNESSRL_CACHE")
    if env:
        return Path(env).resolve()
    repo = checkout_root()
    if repo is not None:
        return repo / ".cache"
    return Path.home() / ".cache" / "harnessrl"
