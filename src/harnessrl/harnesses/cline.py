"""Cline CLI (`cline`), headless: `cline --json --auto-approve true -P openai-compatible -m MODEL PROMPT`.

The npm package is a Node launcher for a compiled Bun binary (`@cline/cli-linux-x64`, an optional
dependency the lockfile pins). It reads its providers from `$CLINE_DATA_DIR/settings/providers.json`
(default `~/.cline/data`); ours configures the built-in `openai-compatible` provider (Chat
Completions, streamed) at the endpoint, with one model and its context window.
`global-settings.json` beside it opts out of telemetry and auto-update; `IS_TEST` keeps its
PostHog client (telemetry and feature flags) from being made. `--auto-approve true` runs every tool
without asking, `--json` prints one JSON event per line on stdout, the last a `run_result` (an
error's message goes to stderr, as a `{"type": "error"}` line). Its shell tool, `run_commands`, takes a
list of command lines (`CommandList`). MCP servers go to
`cline_mcp_settings.json`. Left out: Cline accounts, the hub daemon (`--zen`), the TUI, plan mode,
worktrees, kanban, plugins.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harnessrl.harnesses.adapter import HarnessContext, HarnessResult, LaunchSpec, Mode, ShellTool
from harnessrl.harnesses.base import HarnessBase, context_window
from harnessrl.harnesses.parsing import as_count, as_text, json_lines, outcome, stderr_tail
from harnessrl.sandbox.spec import ExecResult
from harnessrl.types import ChatMessage, ToolCall

VERSION = "3.0.65"
PROVIDER = "openai-compatible"
DATA_DIR = ".cline/data"
STAMP = "2026-01-01T00:00:00.000Z"
"""`updatedAt` of the provider entry (its schema requires a date)."""


@dataclass(frozen=True)
class CommandList(ShellTool):
    """`run_commands` takes a list of command lines (`{"commands": [...]}`); one command is a list of one."""

    def turn(self, command: str, text: str = "") -> ChatMessage:
        call = ToolCall(name=str(self.name), arguments={self.arg: [command]})
        return ChatMessage(role="assistant", content=text, tool_calls=[call])


def cline_providers(ctx: HarnessContext, model: str) -> dict[str, Any]:
    settings = {
        "provider": PROVIDER,
        "apiKey": ctx.endpoint.api_key,
        "model": model,
        "baseUrl": ctx.endpoint.base_url + "/v1",
        "contextWindow": context_window(ctx),
    }
    entry = {"settings": settings, "updatedAt": STAMP, "tokenSource": "manual"}
    return {"version": 1, "lastUsedProvider": PROVIDER, "modes": {}, "providers": {PROVIDER: entry}}


class Cline(HarnessBase):
    name = "cline"
    package = f"cline@{VERSION}"
    shell_tool = CommandList("run_commands", "commands")
    modes = (Mode("openai_chat", 5_699),)

    def prepare(self, ctx: HarnessContext) -> LaunchSpec:
        model = self.model(ctx)
        ctx.write_json(f"{DATA_DIR}/settings/providers.json", cline_providers(ctx, model))
        ctx.write_json(
            f"{DATA_DIR}/settings/global-settings.json", {"telemetryOptOut": True, "autoUpdateEnabled": False}
        )
        self.write_mcp_settings(ctx, f"{DATA_DIR}/settings/cline_mcp_settings.json")
        argv = [self.executable(ctx), "--json", "--auto-approve", "true", "-P", PROVIDER, "-m", model]
        env = {
            "CLINE_DIR": f"{ctx.home}/.cline",
            "CLINE_DATA_DIR": f"{ctx.home}/{DATA_DIR}",
            "IS_TEST": "true",
            "DO_NOT_TRACK": "1",
        }
        return self.launch_spec(ctx, [*argv, ctx.prompt], env)

    def parse(self, res: ExecResult) -> HarnessResult:
        """The `run_result` event on stdout: its `text` is the answer. A `finishReason` other than
        `completed` (`error`, `aborted`, ...) is the harness's error, with the message of the last
        `{"type": "error"}` event it printed on stderr (else the end of stderr)."""
        result: dict[str, Any] | None = None
        for event in json_lines(res.stdout):
            if event.get("type") == "run_result":
                result = event
        if result is None:
            return outcome(res, done=False)
        reason, turns = as_text(result.get("finishReason")), as_count(result.get("iterations"))
        if reason == "completed":
            return outcome(res, done=True, final=as_text(result.get("text")).strip(), turns=turns)
        said = [as_text(e.get("message")) for e in json_lines(res.stderr) if e.get("type") == "error"]
        why = said[-1] if said and said[-1] else stderr_tail(res, 500)
        return outcome(res, done=True, errors=[f"{reason or 'no finish reason'}: {why}"], turns=turns)
