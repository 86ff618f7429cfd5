"""What every harness adapter is: the Harness protocol and the records that cross it.

An adapter never talks to the proxy or the trainer: it gets an Endpoint (a URL as seen from inside
the sandbox, and the rollout's session token as API key), writes its harness's config files into the
sandbox HOME, returns the command line to run, and reads the final message out of what the harness
printed. `harnesses.launch.run_harness` glues one adapter to one Sandbox.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel

from harnessrl.formats import untrusted_json
from harnessrl.harnesses.adapter import Installer, Mode, ShellTool
from harnessrl.sandbox.spec import ExecResult
from harnessrl.types import ChatMessage, HarnessError

if TYPE_CHECKING:
    from harnessrl.chat.format import ChatFormat
    from harnessrl.protocols import Engine


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
    """Adapter-specific switches (claude-code: `bare`; openclaw: `api`)."""

    def write_home_file(self, rel: str, text: str) -> str:
        """Write a file under HOME (host side); return its path as seen inside the sandbox."""
        path = self.host_home / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return f"{self.home}/{rel}"


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


class Harness(Protocol):
    """One unmodified agent harness: install, configure, launch headless, read the result; and what
    the runner, the scripted reference engine and the compatibility table need to know about it
    (`adapter.HarnessBase` gives the defaults; `tests/test_harness_registry.py` checks every one)."""

    name: str
    package: str
    """Pinned package spec (`@openai/codex@0.171.0`, `mini-swe-agent==2.4.6`); "" = nothing to install."""

    @property
    def version(self) -> str: ...

    @property
    def installer(self) -> Installer: ...

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

    def ensure_installed(self, cache_root: Path | None = None) -> Path:
        """Install (once, under a file lock) and return the install folder."""
        ...

    def prepare(self, ctx: HarnessContext) -> LaunchSpec:
        """Write config into ctx.host_home and return the launch command."""
        ...

    def parse(self, res: ExecResult) -> HarnessResult:
        """Final message and status from the harness's output. The output is untrusted (commands
        can write into it): whatever its bytes, this returns a result or raises HarnessError."""
        ...


def mcp_servers_json(servers: tuple[McpServer, ...]) -> dict[str, dict[str, Any]]:
    """`{name: {command, args, env}}`: the stdio-server shape Claude Code and OpenClaw both read."""
    return {s.name: {"command": s.command[0], "args": s.command[1:], "env": s.env} for s in servers}


def json_lines(text: str) -> Iterator[dict[str, Any]]:
    """The JSON objects of a JSONL stream, skipping lines that are not JSON objects (log noise).

    The stream is untrusted (a command can write into the harness's stdout): a line that is valid
    JSON but past what the parser takes (nested too deep, an integer over 4,300 digits) raises
    HarnessError, the one error a harness's `parse` may raise; no harness prints such a line."""
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            obj = load_json(line)
            if isinstance(obj, dict):
                yield obj


def load_json(text: str) -> Any:
    """Harness output decoded by the one untrusted-JSON decoder (`formats.untrusted_json`): None for
    text that is not JSON, HarnessError for JSON past its limits (deeper than 256, an integer over
    4,300 digits). Lone surrogates are kept: `as_text` replaces them."""
    try:
        return untrusted_json.loads(text, "line", keep_surrogates=True)
    except untrusted_json.UntrustedJSONError as e:
        if e.not_json:
            return None
        raise HarnessError(f"the harness's output holds JSON that cannot be read: {e}") from None


def as_text(value: Any) -> str:
    """A string field of harness output as text: strings as they are (lone surrogates, which no
    encoder takes, replaced), numbers written out, anything else (null, lists, objects) empty."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, float) or (isinstance(value, int) and not isinstance(value, bool)):
        return str(value) if abs(value) < 1e18 else ""  # str() of a 5,000-digit int raises
    return ""


def as_count(value: Any) -> int | None:
    """A count field of harness output (turns): a non-negative int below 2**31, else None."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**31:
        return value
    return None


def positive_int(value: Any, option: str) -> int:
    """An adapter option that must be a whole number >= 1 (a config value, not harness output)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"harness option {option} must be a whole number >= 1, got {value!r}")
    return value


def clean_text(text: str) -> str:
    """`text` with lone surrogates (from `\\ud800` escapes in JSON) replaced, so it can be written."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")
    return text


def stderr_tail(res: ExecResult, limit: int = 2000) -> str:
    """Why a run failed, when the harness did not say: the end of stderr (or the start error)."""
    return clean_text((res.error or res.stderr.strip() or res.stdout.strip())[-limit:])


def parse_result_event(res: ExecResult) -> HarnessResult:
    """A `--output-format stream-json` run (Claude Code, Qwen Code): the last `{"type": "result"}`
    event carries the final text, the error flag (`is_error`, `subtype`) and the turn count."""
    result = None
    for event in json_lines(res.stdout):
        if event.get("type") == "result":
            result = event
    if result is None:
        return HarnessResult(
            ok=False, exit_code=res.returncode, timed_out=res.timed_out, error=stderr_tail(res)
        )
    is_error = bool(result.get("is_error")) or result.get("subtype") != "success"
    final = result.get("result")
    final = as_text(final) if isinstance(final, str) else ""
    ok = res.returncode == 0 and not is_error and not res.timed_out
    error = ""
    if is_error:  # `subtype` may still say "success": the reason is in the result text
        error = f"{as_text(result.get('subtype'))}: {final}".strip(": ")
    elif not ok:
        error = stderr_tail(res)
    return HarnessResult(
        ok=ok,
        exit_code=res.returncode,
        final_message=final,
        timed_out=res.timed_out,
        error=error,
        turns=as_count(result.get("num_turns")),
    )


def parse_plain_text(res: ExecResult) -> HarnessResult:
    """A harness whose final message is its plain stdout (Continue's and Hermes' quiet modes): ok on
    a clean exit, the text with lone surrogates replaced, the end of stderr as the error."""
    ok = res.returncode == 0 and not res.timed_out
    return HarnessResult(
        ok=ok,
        exit_code=res.returncode,
        final_message=clean_text(res.stdout.strip()),
        timed_out=res.timed_out,
        error="" if ok else stderr_tail(res),
    )
