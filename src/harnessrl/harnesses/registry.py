"""Harness names -> adapters. Adding a harness = one module + one line here; no plugin discovery.

Parametrised families are named `<family>:<argument>`: `whitebox:01220` is the white-box harness in
configuration 01220 (`FAMILIES` maps the family to a constructor taking the argument)."""

from __future__ import annotations

from collections.abc import Callable

from harnessrl.harnesses.adapter import Harness
from harnessrl.harnesses.aider import Aider
from harnessrl.harnesses.claude_code import ClaudeCode
from harnessrl.harnesses.cline import Cline
from harnessrl.harnesses.code_puppy import CodePuppy
from harnessrl.harnesses.codex import Codex
from harnessrl.harnesses.command_code import CommandCode
from harnessrl.harnesses.continue_cli import ContinueCli
from harnessrl.harnesses.copilot import Copilot
from harnessrl.harnesses.droid import Droid
from harnessrl.harnesses.gemini_cli import GeminiCli
from harnessrl.harnesses.gptme import Gptme
from harnessrl.harnesses.grok_cli import GrokCli
from harnessrl.harnesses.hermes import Hermes
from harnessrl.harnesses.kilo import Kilo
from harnessrl.harnesses.kimi_cli import KimiCli
from harnessrl.harnesses.letta_code import LettaCode
from harnessrl.harnesses.mini_swe_agent import MiniSweAgent
from harnessrl.harnesses.mistral_vibe import MistralVibe
from harnessrl.harnesses.nanocoder import Nanocoder
from harnessrl.harnesses.openclaw import OpenClaw
from harnessrl.harnesses.opencode import Opencode
from harnessrl.harnesses.pi import Pi
from harnessrl.harnesses.qwen_code import QwenCode
from harnessrl.harnesses.shell import Shell
from harnessrl.harnesses.whitebox import Whitebox
from harnessrl.types import WHITEBOX, HarnessError, HarnessName

HARNESSES: dict[str, Harness] = {
    "claude-code": ClaudeCode(),
    "cline": Cline(),
    "codex": Codex(),
    "command-code": CommandCode(),
    "continue": ContinueCli(),
    "copilot": Copilot(),
    "droid": Droid(),
    "gemini-cli": GeminiCli(),
    "grok-cli": GrokCli(),
    "hermes": Hermes(),
    "kilo": Kilo(),
    "letta-code": LettaCode(),
    "nanocoder": Nanocoder(),
    "openclaw": OpenClaw(),
    "pi": Pi(),
    "opencode": Opencode(),
    "qwen-code": QwenCode(),
    "mini-swe-agent": MiniSweAgent(),
    "mistral-vibe": MistralVibe(),
    "kimi-cli": KimiCli(),
    "gptme": Gptme(),
    "aider": Aider(),
    "code-puppy": CodePuppy(),
    "shell": Shell(),
}
FAMILIES: dict[str, Callable[[str], Harness]] = {WHITEBOX: Whitebox}


def get_harness(name: str | HarnessName) -> Harness:
    """The adapter registered under `name`; HarnessError listing the known names otherwise."""
    try:
        parsed = name if isinstance(name, HarnessName) else HarnessName.parse(name)
    except ValueError:
        parsed = HarnessName(family=str(name))  # not a registered name: the error below says so
    if parsed.arg and parsed.family in FAMILIES:
        try:
            return FAMILIES[parsed.family](parsed.arg)
        except ValueError as e:
            raise HarnessError(f"bad harness name {str(name)!r}: {e}") from None
    if not parsed.arg and parsed.family in HARNESSES:
        return HARNESSES[parsed.family]
    known = [*sorted(HARNESSES), *(f"{f}:<config>" for f in FAMILIES)]
    raise HarnessError(f"unknown harness {str(name)!r}; known: {', '.join(known)}")
