"""Harness names -> adapters. Adding a harness = one module + one line here; no plugin discovery."""

from __future__ import annotations

from harnessrl.harnesses.base import Harness
from harnessrl.harnesses.claude_code import ClaudeCode
from harnessrl.harnesses.codex import Codex
from harnessrl.harnesses.openclaw import OpenClaw
from harnessrl.harnesses.shell import Shell
from harnessrl.types import HarnessError

HARNESSES: dict[str, Harness] = {
    "claude-code": ClaudeCode(),
    "codex": Codex(),
    "openclaw": OpenClaw(),
    "shell": Shell(),
}


def get_harness(name: str) -> Harness:
    """The adapter registered under `name`; HarnessError listing the known names otherwise."""
    try:
        return HARNESSES[name]
    except KeyError:
        raise HarnessError(f"unknown harness {name!r}; known: {', '.join(sorted(HARNESSES))}") from None
