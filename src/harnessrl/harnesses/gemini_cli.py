"""Gemini CLI (`@google/gemini-cli`), headless: `gemini -p PROMPT --output-format stream-json --yolo`.

It speaks the Gemini API (`POST {GOOGLE_GEMINI_BASE_URL}/v1beta/models/{model}:streamGenerateContent
?alt=sse`, key in `x-goog-api-key`), through the `@google/genai` SDK, API-key auth with `GEMINI_API_KEY`.
`~/.gemini/settings.json` turns off telemetry, usage statistics, auto-update and its notice,
checkpointing, folder trust (the workspace is trusted: no prompt) and the loop-detection and
next-speaker side calls; `--yolo` approves every tool call. The generation config stays the CLI's own
for the model (thoughts included, a thinking budget: the Gemini dialect accepts both). The model is
named explicitly, which keeps the CLI's model router (classifier calls to a small model) out of the
run. MCP servers go to `mcpServers` in the same settings file. Left out: OAuth / Code Assist and
Vertex logins, extensions, sessions (`--resume`), the interactive UI.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harnessrl.harnesses.adapter import HarnessBase, Mode, ShellTool
from harnessrl.harnesses.base import (
    HarnessContext,
    HarnessResult,
    LaunchSpec,
    json_lines,
    mcp_servers_json,
    stderr_tail,
)
from harnessrl.harnesses.install import npm_install
from harnessrl.sandbox.spec import ExecResult

VERSION = "0.61.0"


def gemini_settings(ctx: HarnessContext) -> dict[str, Any]:
    settings: dict[str, Any] = {
        "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False, "logPrompts": False},
        "general": {
            "enableAutoUpdate": False,
            "enableAutoUpdateNotification": False,
            "checkpointing": {"enabled": False},
        },
        "model": {"disableLoopDetection": True, "skipNextSpeakerCheck": True},
        "ide": {"enabled": False},
    }
    if ctx.mcp_servers:
        settings["mcpServers"] = mcp_servers_json(ctx.mcp_servers)
    return settings


class GeminiCli(HarnessBase):
    name = "gemini-cli"
    version = VERSION
    package = f"@google/gemini-cli@{VERSION}"
    shell_tool = ShellTool("run_shell_command", "command")
    modes = (Mode("gemini", 11_224),)
    default_model = "gemini-2.5-pro"
    """A model the CLI knows (its token limit, no router); the proxy serves whatever policy it holds."""

    def ensure_installed(self, cache_root: Path | None = None) -> Path:
        return npm_install(f"{self.name}-{VERSION}", [[self.package]], cache_root)

    def prepare(self, ctx: HarnessContext) -> LaunchSpec:
        model = ctx.endpoint.model or self.default_model
        ctx.write_home_file(".gemini/settings.json", json.dumps(gemini_settings(ctx), indent=1))
        exe = str(ctx.install_dir / "node_modules" / ".bin" / "gemini")
        argv = [exe, "-p", ctx.prompt, "--output-format", "stream-json", "--yolo", "--model", model]
        env = {
            "GEMINI_API_KEY": ctx.endpoint.api_key,
            "GOOGLE_GEMINI_BASE_URL": ctx.endpoint.base_url,
            "GEMINI_CLI_NO_RELAUNCH": "true",
            "NO_COLOR": "1",
        }
        return LaunchSpec(argv=argv, env=env, cwd=ctx.workspace)

    def parse(self, res: ExecResult) -> HarnessResult:
        """stream-json events: assistant `message` deltas (text after the last tool call is the final
        message), `error` events, and one `result` with `status` success | error."""
        parts: list[str] = []
        errors: list[str] = []
        result: dict[str, Any] | None = None
        turns = 0
        for event in json_lines(res.stdout):
            kind = event.get("type")
            if kind == "message" and event.get("role") == "assistant":
                parts.append(str(event.get("content", "")))
            elif kind == "tool_use":
                parts, turns = [], turns + 1
            elif kind == "error" and event.get("severity") != "warning":
                errors.append(str(event.get("message", "")))
            elif kind == "result":
                result = event
                err = event.get("error")
                if isinstance(err, dict):
                    errors.append(str(err.get("message", "")))
        success = result is not None and result.get("status") == "success"
        ok = res.returncode == 0 and success and not errors and not res.timed_out
        error = "; ".join(e for e in errors if e) if errors else ("" if ok else stderr_tail(res))
        return HarnessResult(
            ok=ok,
            exit_code=res.returncode,
            final_message="".join(parts).strip(),
            timed_out=res.timed_out,
            error=error if not ok else "",
            turns=turns + 1 if result is not None else None,
        )
