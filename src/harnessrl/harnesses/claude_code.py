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
from pathlib import Path

from harnessrl.harnesses.adapter import HarnessBase, Mode, ShellTool
from harnessrl.harnesses.base import (
    HarnessContext,
    HarnessResult,
    LaunchSpec,
    mcp_servers_json,
    parse_result_event,
    positive_int,
)
from harnessrl.harnesses.install import npm_install
from harnessrl.sandbox.spec import ExecResult

VERSION = "2.1.332"


class ClaudeCode(HarnessBase):
    name = "claude-code"
    version = VERSION
    package = f"@anthropic-ai/claude-code@{VERSION}"
    shell_tool = ShellTool("Bash", "command")
    modes = (Mode("anthropic", 21_174), Mode("anthropic", 1_210, {"bare": True}, "--bare"))
    shorter_prompt = "run Claude Code with `bare` (`--option bare=true`)"
    default_model = "claude-sonnet-4-5"

    def ensure_installed(self, cache_root: Path | None = None) -> Path:
        return npm_install(f"{self.name}-{VERSION}", [[self.package]], cache_root)

    def prepare(self, ctx: HarnessContext) -> LaunchSpec:
        model = ctx.endpoint.model or self.default_model
        exe = str(ctx.install_dir / "node_modules" / ".bin" / "claude")
        argv = [exe, "-p", ctx.prompt, "--output-format", "stream-json", "--verbose"]
        argv += ["--dangerously-skip-permissions", "--model", model]
        if ctx.options.get("bare"):
            argv.append("--bare")
        if ctx.options.get("max_turns") is not None:
            argv += ["--max-turns", str(positive_int(ctx.options["max_turns"], "max_turns"))]
        if ctx.mcp_servers:
            servers = mcp_servers_json(ctx.mcp_servers)
            argv += [
                "--mcp-config",
                ctx.write_home_file(".harnessrl/mcp.json", json.dumps({"mcpServers": servers})),
            ]
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

    def parse(self, res: ExecResult) -> HarnessResult:
        """The last `{"type": "result"}` event carries the final text, the error flag and the turn count."""
        return parse_result_event(res)
