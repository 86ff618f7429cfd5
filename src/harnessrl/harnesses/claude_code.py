"""Claude Code (`@anthropic-ai/claude-code`), headless: `claude -p PROMPT --output-format stream-json`.

It speaks Anthropic Messages (`POST {ANTHROPIC_BASE_URL}/v1/messages?beta=true`, streamed). Run as
root with `--dangerously-skip-permissions` it needs `IS_SANDBOX=1`; with the nonessential-traffic and
telemetry switches off it makes no call but the model's. Both model slots (main and small/fast) are
pinned to the one name we serve, so sub-agents and background calls reach the same policy.
Options: `bare` (bool) adds `--bare` (3 tools, 4 KB prompts); `max_turns` (int) adds `--max-turns N`
(the run ends with `error_max_turns` after N model turns: a rollout that never stops costs N calls, not
the rollout timeout). MCP servers go to `--mcp-config`.
Left out: `--resume`/sessions, OAuth logins, settings.json hooks: a rollout is one fresh `-p` run.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from harnessrl.harnesses.adapter import HarnessContext, LaunchSpec, Mode, ShellTool
from harnessrl.harnesses.base import HarnessBase, mcp_settings, positive_int
from harnessrl.harnesses.parsing import parse_result_event

VERSION = "2.1.332"


class ClaudeCode(HarnessBase):
    name = "claude-code"
    package = f"@anthropic-ai/claude-code@{VERSION}"
    command = "claude"
    install_scripts = ("@anthropic-ai/claude-code",)
    """Its postinstall copies the native binary of its platform package over the `claude` stub."""
    shell_tool = ShellTool("Bash", "command")
    modes = (Mode("anthropic", 21_174), Mode("anthropic", 1_210, {"bare": True}, "--bare"))
    shorter_prompt = "run Claude Code with `bare` (`--option bare=true`)"
    default_model = "claude-sonnet-4-5"

    def check_options(self, options: Mapping[str, Any]) -> None:
        if options.get("max_turns") is not None:
            positive_int(options["max_turns"], "max_turns")

    def prepare(self, ctx: HarnessContext) -> LaunchSpec:
        model = self.model(ctx)
        argv = [self.executable(ctx), "-p", ctx.prompt, "--output-format", "stream-json", "--verbose"]
        argv += ["--dangerously-skip-permissions", "--model", model]
        if ctx.options.get("bare"):
            argv.append("--bare")
        if ctx.options.get("max_turns") is not None:
            argv += ["--max-turns", str(ctx.options["max_turns"])]
        if ctx.mcp_servers:
            servers = json.dumps(mcp_settings(ctx.mcp_servers))
            argv += ["--mcp-config", ctx.write_home_file(".harnessrl/mcp.json", servers)]
        env = {
            "IS_SANDBOX": "1",
            "ANTHROPIC_BASE_URL": ctx.endpoint.base_url,
            "ANTHROPIC_API_KEY": ctx.endpoint.api_key,
            "ANTHROPIC_MODEL": model,
            "ANTHROPIC_SMALL_FAST_MODEL": model,
            "ANTHROPIC_DEFAULT_HAIKU_MODEL": model,
            "ANTHROPIC_DEFAULT_SONNET_MODEL": model,
            "ANTHROPIC_DEFAULT_OPUS_MODEL": model,
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_ERROR_REPORTING": "1",
        }
        return LaunchSpec(argv=argv, env=env, cwd=ctx.workspace)

    parse = staticmethod(parse_result_event)
    """The last `{"type": "result"}` event carries the final text, the error flag and the turn count."""
