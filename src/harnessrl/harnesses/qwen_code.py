"""Qwen Code (`@qwen-code/qwen-code`), headless: `qwen -p PROMPT --approval-mode=yolo -o stream-json`.

It speaks OpenAI Chat Completions (`POST {baseUrl}/chat/completions`, streamed). Everything is set in
`$HOME/.qwen/settings.json`: one `modelProviders.openai` entry at the endpoint with its key read from
an env var, `security.auth.selectedType = "openai"` (no interactive `/auth`), folder trust, auto-update,
usage statistics and telemetry off. It needs Node >= 22: the pinned Node of `install.NODE_PACKAGE` is
locked beside it and put first on PATH. MCP servers go to `mcpServers` (trusted: no prompts).
Left out: its own sandboxing (`--sandbox`: we are the sandbox), sessions, sub-agent settings.
"""

from __future__ import annotations

from typing import Any

from harnessrl.harnesses.adapter import HarnessContext, LaunchSpec, Mode, ShellTool
from harnessrl.harnesses.base import KEY_ENV, HarnessBase, mcp_servers_json
from harnessrl.harnesses.parsing import parse_result_event

VERSION = "0.24.4"


def qwen_settings(ctx: HarnessContext, model: str) -> dict[str, Any]:
    provider = {"id": model, "name": model, "baseUrl": ctx.endpoint.base_url + "/v1", "envKey": KEY_ENV}
    settings: dict[str, Any] = {
        "modelProviders": {"openai": [provider]},
        "security": {"auth": {"selectedType": "openai"}, "folderTrust": {"enabled": False}},
        "model": {"name": model},
        "general": {"enableAutoUpdate": False},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
    }
    if ctx.mcp_servers:
        settings["mcpServers"] = mcp_servers_json(ctx.mcp_servers, last={"trust": True})
    return settings


class QwenCode(HarnessBase):
    name = "qwen-code"
    package = f"@qwen-code/qwen-code@{VERSION}"
    command = "qwen"
    pinned_node = True
    shell_tool = ShellTool("run_shell_command", "command")
    modes = (Mode("openai_chat", 18_364),)

    def prepare(self, ctx: HarnessContext) -> LaunchSpec:
        ctx.write_json(".qwen/settings.json", qwen_settings(ctx, self.model(ctx)))
        argv = [
            self.executable(ctx),
            "-p",
            ctx.prompt,
            "--approval-mode=yolo",
            "--output-format",
            "stream-json",
        ]
        env = {
            "PATH": self.launch_path(ctx),
            KEY_ENV: ctx.endpoint.api_key,
            "QWEN_CODE_SUPPRESS_YOLO_WARNING": "1",
        }
        return self.launch_spec(ctx, argv, env)

    parse = staticmethod(parse_result_event)
    """Claude Code's stream-json: the last `{"type": "result"}` event."""
