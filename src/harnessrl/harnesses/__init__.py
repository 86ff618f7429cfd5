"""Harness adapters: one small module per unmodified agent harness, and a literal registry.

`get_harness(name)` -> an adapter (`adapter.Harness`: `ensure_installed`, `check_options`, `prepare`,
`parse`; each a `base.HarnessBase`); `run_harness(...)` runs one inside a Sandbox. Adapters never
import the proxy or the trainer; they install from the lockfiles in `locks/` (`install.py`).
"""

from harnessrl.harnesses.adapter import (
    Endpoint,
    Harness,
    HarnessContext,
    HarnessResult,
    LaunchSpec,
    McpServer,
)
from harnessrl.harnesses.launch import check_options, harness_binds, run_harness
from harnessrl.harnesses.registry import HARNESSES, get_harness

__all__ = [
    "HARNESSES",
    "Endpoint",
    "Harness",
    "HarnessContext",
    "HarnessResult",
    "LaunchSpec",
    "McpServer",
    "check_options",
    "get_harness",
    "harness_binds",
    "run_harness",
]
