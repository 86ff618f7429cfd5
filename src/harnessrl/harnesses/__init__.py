"""Harness adapters: one small module per unmodified agent harness, and a literal registry.

`get_harness(name)` -> an adapter (`ensure_installed`, `prepare`, `parse`); `run_harness(...)` runs
one inside a Sandbox. Adapters never import the proxy or the trainer.
"""

from harnessrl.harnesses.base import Endpoint, Harness, HarnessContext, HarnessResult, LaunchSpec, McpServer
from harnessrl.harnesses.launch import harness_binds, run_harness
from harnessrl.harnesses.registry import HARNESSES, get_harness

__all__ = [
    "HARNESSES",
    "Endpoint",
    "Harness",
    "HarnessContext",
    "HarnessResult",
    "LaunchSpec",
    "McpServer",
    "get_harness",
    "harness_binds",
    "run_harness",
]
