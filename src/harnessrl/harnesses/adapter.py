"""What a harness adapter is: the Harness protocol and the records that cross it.

An adapter never talks to the proxy or the trainer: it gets an Endpoint (a URL as seen from inside
the sandbox, and the rollout's session token as API key), writes its harness's config files into the
sandbox HOME, returns the command line to run, and reads the final message out of what the harness
printed. `harnesses.launch.run_harness` glues one adapter to one Sandbox; `base.HarnessBase` gives
every adapter its shared behaviour (install, paths, options, the reference turns).

- `ShellTool`: how the harness's model runs one shell command: a native tool call `name({arg: cmd})`,
  or (`name=None`) a fenced block in its text, for harnesses that act through text. This is the only
  definition of a shell-tool shape outside the harness programs themselves; the scripted reference
  engine, SFT demonstrations and tests take it from the adapter.
- `Mode`: one configuration of the harness (adapter options), the dialect it speaks in it, and its
  first-prompt size (SmolLM2 tokens, as the compatibility table measures it on a bundled task).
  The first mode is the default; `scripts/harness_compat` runs each one and checks the size.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from pydantic import BaseModel

from harnessrl.sandbox.spec import ExecResult
from harnessrl.types import ChatMessage, DialectName, ToolCall

if TYPE_CHECKING:
    from harnessrl.chat.format import ChatFormat
    from harnessrl.protocols import Engine

Installer = Literal["npm", "pypi", "local", "none"]
"""Where its install comes from: npm, PyPI (a venv), files of this package, nothing."""
FIRST_PROMPT_TOLERANCE = 0.15
"""A measured first prompt more than this fraction away from the declared size fails the size check."""


@dataclass(frozen=True)
class Endpoint:
    """The model endpoint of one rollout, as the harness inside the sandbox must address it."""

    base_url: str
    """API root without `/v1` (e.g. `http://127.0.0.1:18080/r/<token>`); adapters append what their
    SDK expects."""
    api_key: str
    """The rollout's session token; harnesses send it as their API key."""
    model: str | None = None
    """Model name the harness asks for; None = the adapter's default (a name the harness knows)."""


@dataclass(frozen=True)
class McpServer:
    """A stdio MCP server the harness starts inside the sandbox."""

    name: str
    command: list[str]
    """Executable and arguments, as seen inside the sandbox."""
    env: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class HarnessContext:
    """Everything an adapter needs to configure one launch."""

    prompt: str
    endpoint: Endpoint
    workspace: str
    """Workspace path inside the sandbox (the harness's working directory)."""
    home: str
    """HOME inside the sandbox."""
    host_home: Path
    """The same HOME folder on the host, where config files are written before launch."""
    install_dir: Path
    """What `ensure_installed()` returned (bound read-only at the same path inside)."""
    mcp_servers: tuple[McpServer, ...] = ()
    options: dict[str, Any] = field(default_factory=dict)
    """Adapter-specific switches (claude-code: `bare`; openclaw: `api`), checked by `check_options`."""

    def write_home_file(self, rel: str, text: str) -> str:
        """Write a file under HOME (host side); return its path as seen inside the sandbox."""
        path = self.host_home / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return f"{self.home}/{rel}"

    def write_json(self, rel: str, value: Any) -> str:
        """`write_home_file` of `value` as JSON (which YAML, JSON5 and JSON readers all take)."""
        return self.write_home_file(rel, json.dumps(value, indent=1))


@dataclass(frozen=True)
class LaunchSpec:
    """The command to run inside the sandbox."""

    argv: list[str]
    env: dict[str, str]
    cwd: str
    rlimits: dict[str, int | None] = field(default_factory=dict)
    """Overrides of the sandbox's per-command rlimits (None lifts one); see Sandbox.exec."""


class HarnessResult(BaseModel):
    """How one harness run ended, as far as the harness itself says."""

    ok: bool
    """Exited 0 and reported no error."""
    exit_code: int
    final_message: str = ""
    """The harness's last assistant message (what it would show the user)."""
    timed_out: bool = False
    error: str = ""
    """Why the run is not ok: the harness's own error report, or the tail of its stderr."""
    turns: int | None = None
    """Model turns the harness reports, when it reports them."""


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

    dialect: DialectName
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


class Harness(Protocol):
    """One unmodified agent harness: install, configure, launch headless, read the result; and what
    the runner, the scripted reference engine and the compatibility table need to know about it
    (`base.HarnessBase` gives the defaults; `tests/test_harness_registry.py` checks every one)."""

    name: str
    package: str
    """Pinned package spec (`@openai/codex@0.171.0`, `mini-swe-agent==2.4.6`); "" = nothing to install."""

    @property
    def version(self) -> str: ...

    @property
    def installer(self) -> Installer: ...

    @property
    def says_version(self) -> str | None:
        """What its binary prints for `--version` when that differs from `version` (None: the same)."""
        ...

    @property
    def shell_tool(self) -> ShellTool | None:
        """How its model runs a shell command (None: it has no model-driven shell)."""
        ...

    @property
    def modes(self) -> tuple[Mode, ...]:
        """Its configurations for the compatibility table, each with its dialect; the first is the default."""
        ...

    @property
    def shorter_prompt(self) -> str:
        """How to shrink its first prompt, when it has a way ("" when not)."""
        ...

    def reference_turns(self, *commands: str) -> list[ChatMessage | str]:
        """The known-good turns: each command through its shell tool, then its way of finishing."""
        ...

    def reference_engine(
        self, fmt: ChatFormat, scripts: Sequence[tuple[str, Sequence[str]]], *, max_context: int | None
    ) -> Engine:
        """The scripted engine replaying `reference_turns` for each (prompt substring, commands)."""
        ...

    def install_dir(self, cache_root: Path | None = None) -> Path:
        """Where it is (or will be) installed: the one place that computes the folder."""
        ...

    def entry(self, install_dir: Path) -> Path:
        """Its executable in the install at `install_dir` (what a launch runs)."""
        ...

    def ensure_installed(self, cache_root: Path | None = None) -> Path:
        """Install (once, under a file lock) and return `install_dir`."""
        ...

    def is_installed(self, cache_root: Path | None = None) -> bool:
        """Whether `install_dir` holds a finished install."""
        ...

    def check_options(self, options: Mapping[str, Any]) -> None:
        """ValueError naming an option it does not take or a value it cannot use; called before any
        sandbox is made."""
        ...

    def prepare(self, ctx: HarnessContext) -> LaunchSpec:
        """Write config into ctx.host_home and return the launch command."""
        ...

    def parse(self, res: ExecResult) -> HarnessResult:
        """Final message and status from the harness's output. The output is untrusted (commands
        can write into it): whatever its bytes, this returns a result or raises HarnessError."""
        ...
