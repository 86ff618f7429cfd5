"""Kilo Code CLI (`@kilocode/cli`), headless: `kilo run --format json --auto -m harnessrl/MODEL PROMPT`.

Kilo (an opencode fork, a compiled Bun binary) reads `$KILO_CONFIG`; ours declares one provider,
`harnessrl`, through the bundled OpenAI-compatible SDK (`@ai-sdk/openai-compatible`, Chat
Completions) at the endpoint, with one model and every permission allowed. Update checks, the model
catalog fetch, sharing, session upload, telemetry, LSP downloads, the default plugins and the
Claude Code import are switched off by environment variables; `--auto` approves tool calls. MCP
servers go to the config's `mcp` table (local servers). Left out: Kilo accounts and its gateway,
the daemon, the TUI, agents other than the default.
"""

from __future__ import annotations

from harnessrl.harnesses.adapter import HarnessContext, HarnessResult, LaunchSpec, Mode, ShellTool
from harnessrl.harnesses.base import KEY_ENV, HarnessBase
from harnessrl.harnesses.opencode import opencode_config, parse_opencode_events
from harnessrl.sandbox.spec import ExecResult

VERSION = "7.7.7"
"""7.8.1 is the newest `@kilocode/cli`, but its Linux binary package was never published."""
OFF_SWITCHES = (
    "KILO_DISABLE_AUTOUPDATE",
    "KILO_DISABLE_MODELS_FETCH",
    "KILO_DISABLE_SHARE",
    "KILO_DISABLE_SESSION_INGEST",
    "KILO_DISABLE_PRESENCE",
    "KILO_DISABLE_LSP_DOWNLOAD",
    "KILO_DISABLE_DEFAULT_PLUGINS",
    "KILO_DISABLE_CLAUDE_CODE",
    "KILO_DISABLE_EXTERNAL_SKILLS",
    "KILO_DISABLE_CODEBASE_INDEXING",
    "KILO_DISABLE_PROJECT_CONFIG",
    "KILO_NO_DAEMON",
)


class Kilo(HarnessBase):
    name = "kilo"
    package = f"@kilocode/cli@{VERSION}"
    shell_tool = ShellTool("bash", "command")
    modes = (Mode("openai_chat", 12_669),)

    def prepare(self, ctx: HarnessContext) -> LaunchSpec:
        """opencode's config (Kilo is its fork), the model marked as calling tools."""
        model = self.model(ctx)
        cfg = ctx.write_json(".config/kilo/kilo.json", opencode_config(ctx, model, tool_call=True))
        argv = [self.executable(ctx), "run", "--format", "json", "--auto", "-m", f"harnessrl/{model}"]
        env = {"KILO_CONFIG": cfg, KEY_ENV: ctx.endpoint.api_key}
        env |= dict.fromkeys(OFF_SWITCHES, "1") | {"KILO_TELEMETRY_LEVEL": "off"}
        return self.launch_spec(ctx, [*argv, ctx.prompt], env)

    def parse(self, res: ExecResult) -> HarnessResult:
        """opencode's JSON events, a turn per `step_start`."""
        return parse_opencode_events(res, "step_start")
