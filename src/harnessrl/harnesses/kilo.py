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

import json
from pathlib import Path
from typing import Any

from harnessrl.harnesses.adapter import HarnessBase, Mode, ShellTool
from harnessrl.harnesses.base import HarnessContext, HarnessResult, LaunchSpec, json_lines, stderr_tail
from harnessrl.harnesses.install import npm_install
from harnessrl.harnesses.opencode import KEY_ENV, opencode_config
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


def kilo_config(ctx: HarnessContext, model: str) -> dict[str, Any]:
    """opencode's config (Kilo is its fork), the model marked as calling tools."""
    return opencode_config(ctx, model, tool_call=True)


class Kilo(HarnessBase):
    name = "kilo"
    version = VERSION
    package = f"@kilocode/cli@{VERSION}"
    shell_tool = ShellTool("bash", "command")
    modes = (Mode("openai_chat", 12_669),)
    default_model = "policy"

    def ensure_installed(self, cache_root: Path | None = None) -> Path:
        return npm_install(f"{self.name}-{VERSION}", [[self.package]], cache_root)

    def prepare(self, ctx: HarnessContext) -> LaunchSpec:
        model = ctx.endpoint.model or self.default_model
        cfg = ctx.write_home_file(".config/kilo/kilo.json", json.dumps(kilo_config(ctx, model), indent=1))
        exe = str(ctx.install_dir / "node_modules" / ".bin" / "kilo")
        argv = [exe, "run", "--format", "json", "--auto", "-m", f"harnessrl/{model}", ctx.prompt]
        env = {"KILO_CONFIG": cfg, KEY_ENV: ctx.endpoint.api_key, "NO_COLOR": "1"}
        env |= {switch: "1" for switch in OFF_SWITCHES}
        env["KILO_TELEMETRY_LEVEL"] = "off"
        return LaunchSpec(argv=argv, env=env, cwd=ctx.workspace)

    def parse(self, res: ExecResult) -> HarnessResult:
        """JSON events: `text` parts (the last one is the final message), `error` events."""
        final, errors, steps = "", [], 0
        for event in json_lines(res.stdout):
            kind = event.get("type")
            part = event.get("part")
            part = part if isinstance(part, dict) else {}
            if kind == "text":
                final = str(part.get("text", ""))
            elif kind == "step_start":
                steps += 1
            elif kind == "error":
                err = event.get("error")
                data = err.get("data") if isinstance(err, dict) else None
                message = data.get("message") if isinstance(data, dict) else None
                errors.append(str(message or err))
        ok = res.returncode == 0 and not errors and not res.timed_out and bool(steps)
        error = "; ".join(errors) if errors else ("" if ok else stderr_tail(res))
        return HarnessResult(
            ok=ok,
            exit_code=res.returncode,
            final_message=final.strip(),
            timed_out=res.timed_out,
            error=error,
            turns=steps or None,
        )
