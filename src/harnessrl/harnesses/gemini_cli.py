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

from typing import Any

from harnessrl.harnesses.adapter import HarnessContext, HarnessResult, LaunchSpec, Mode, ShellTool
from harnessrl.harnesses.base import HarnessBase, mcp_servers_json
from harnessrl.harnesses.parsing import as_dict, json_lines, outcome
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
    package = f"@google/gemini-cli@{VERSION}"
    command = "gemini"
    shell_tool = ShellTool("run_shell_command", "command")
    modes = (Mode("gemini", 11_224),)
    default_model = "gemini-2.5-pro"
    """A model the CLI knows (its token limit, no router); the proxy serves whatever policy it holds."""

    def prepare(self, ctx: HarnessContext) -> LaunchSpec:
        ctx.write_json(".gemini/settings.json", gemini_settings(ctx))
        argv = [self.executable(ctx), "-p", ctx.prompt, "--output-format", "stream-json", "--yolo"]
        env = {
            "GEMINI_API_KEY": ctx.endpoint.api_key,
            "GOOGLE_GEMINI_BASE_URL": ctx.endpoint.base_url,
            "GEMINI_CLI_NO_RELAUNCH": "true",
        }
        return self.launch_spec(ctx, [*argv, "--model", self.model(ctx)], env)

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
                if isinstance(event.get("error"), dict):
                    errors.append(str(as_dict(event["error"]).get("message", "")))
        done = result is not None and result.get("status") == "success"
        said = [e for e in errors if e] or errors[:1]  # an error event with no message still fails
        reported = turns + 1 if result is not None else None
        return outcome(res, done=done, final="".join(parts).strip(), errors=said, turns=reported)
