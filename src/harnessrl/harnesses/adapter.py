"""What an adapter declares about its harness besides install, config and parsing, in one place.

- `ShellTool`: how the harness's model runs one shell command: a native tool call `name({arg: cmd})`,
  or (`name=None`) a fenced block in its text, for harnesses that act through text. This is the only
  definition of a shell-tool shape outside the harness programs themselves; the scripted reference
  engine, SFT demonstrations and tests take it from the adapter.
- `Mode`: one configuration of the harness (adapter options), the dialect it speaks in it, and its
  first-prompt size (SmolLM2 tokens, as the compatibility table measures it on a bundled task).
  The first mode is the default; `scripts/harness_compat` runs each one and checks the size.
- `HarnessBase`: the defaults: the known-good sequence the scripted reference engine plays
  (`reference_turns`: run the command through the shell tool, then finish) and that engine.

Adding a harness = one module with a `HarnessBase` subclass + one line in `registry.HARNESSES`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from harnessrl.types import ChatMessage, ToolCall

if TYPE_CHECKING:
    from harnessrl.chat.format import ChatFormat
    from harnessrl.protocols import Engine

Dialect = Literal["anthropic", "openai_chat", "openai_responses", "gemini"]
"""The proxy dialect names (`ModelCall.dialect`) a harness can speak."""
Installer = Literal["npm", "pypi", "local", "none"]
"""Where its install comes from: npm, PyPI (a pinned venv), files of this package, nothing."""
FIRST_PROMPT_TOLERANCE = 0.15
"""A measured first prompt more than this fraction away from the declared size fails the size check."""


@dataclass(frozen=True)
class ShellTool:
    """How the model runs one shell command: `name({arg: command})`, or a fenced block if `name` is None."""

    name: str | None
    arg: str = "command"
    """The argument holding the command line (native calls)."""
    fence: str = "bash"
    """The info string of the fenced block (text actions): ```bash, ```mswea_bash_command, ..."""
    extra: dict[str, Any] = field(default_factory=dict, hash=False)
    """Other arguments the tool requires, sent with fixed values (opencode's `description`)."""

    def turn(self, command: str, text: str = "") -> ChatMessage:
        """One assistant turn that runs `command` (with `text` before a fenced block)."""
        if self.name is None:
            return ChatMessage(role="assistant", content=f"{text}```{self.fence}\n{command}\n```")
        return ChatMessage(
            role="assistant",
            content=text,
            tool_calls=[ToolCall(name=self.name, arguments={self.arg: command, **self.extra})],
        )


TEXT_SHELL = ShellTool(None)
"""Acting through text: one fenced ```bash block per turn (mini-swe-agent, whitebox's fenced level)."""


@dataclass(frozen=True)
class Mode:
    """One configuration of a harness, as the compatibility table runs it."""

    dialect: Dialect
    first_prompt_tokens: int | None
    """SmolLM2 tokens of the first request, as `scripts/harness_compat` measures it on a bundled task
    (a task prompt is a few dozen of them; None: it varies, as whitebox's with its configuration)."""
    options: dict[str, Any] = field(default_factory=dict)
    note: str = ""
    """How this mode differs from the default (`--bare`, `api openai-completions`)."""

    def check_first_prompt(self, measured: int) -> str:
        """Why `measured` is off the declared size by more than FIRST_PROMPT_TOLERANCE; "" when it is not."""
        if self.first_prompt_tokens is None:
            return ""
        if abs(measured - self.first_prompt_tokens) <= FIRST_PROMPT_TOLERANCE * self.first_prompt_tokens:
            return ""
        return f"first prompt is {measured} tokens, declared {self.first_prompt_tokens}: update the Mode"


class HarnessBase:
    """Defaults every adapter shares; subclasses set the class attributes and install/prepare/parse."""

    name: str
    version: str = ""
    package: str = ""
    """Pinned package spec (`@openai/codex@0.171.0`, `mini-swe-agent==2.4.6`); "" = nothing to install."""
    installer: Installer = "npm"
    shell_tool: ShellTool | None = None
    """None: the harness's model has no shell of its own (the `shell` harness runs a fixed command)."""
    modes: tuple[Mode, ...] = ()
    shorter_prompt: str = ""
    """How to make this harness's first prompt shorter, when it has a way (`option bare=true`)."""
    finish: str = "done"
    """The final answer of the reference sequence."""

    def final_turns(self) -> list[ChatMessage | str]:
        """How the reference sequence ends: the final answer (a harness that ends on a command overrides)."""
        return [self.finish]

    def reference_turns(self, *commands: str) -> list[ChatMessage | str]:
        """The known-good sequence: each command through the shell tool, then `final_turns()`."""
        if self.shell_tool is None:
            return self.final_turns()
        return [*(self.shell_tool.turn(c) for c in commands), *self.final_turns()]

    def reference_engine(
        self, fmt: ChatFormat, scripts: Sequence[tuple[str, Sequence[str]]], *, max_context: int | None
    ) -> Engine:
        """The scripted engine answering a prompt that contains a script's match (first wins) with the
        `reference_turns` of its commands, one turn per call."""
        from harnessrl.engines.scripted import Script, ScriptedEngine

        if self.shell_tool is None:  # e.g. the shell harness: any call it makes gets the final answer
            return ScriptedEngine(fmt, self.final_turns(), max_context=max_context)
        built = [Script(turns=self.reference_turns(*commands), match=match) for match, commands in scripts]
        return ScriptedEngine(fmt, built, max_context=max_context)
