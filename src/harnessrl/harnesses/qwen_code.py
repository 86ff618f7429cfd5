"""Qwen Code (`@qwen-code/qwen-code`), headless: `qwen -p PROMPT --approval-mode=yolo -o stream-json`.

It speaks OpenAI Chat Completions (`POST {baseUrl}/chat/completions`, streamed). Everything is set in
`$HOME/.qwen/settings.json`: one `modelProviders.openai` entry at the endpoint with its key read from
an env var, `security.auth.selectedType = "openai"` (no interactive `/auth`), folder trust, auto-update,
usage statistics and telemetry off. It needs Node >= 22: the pinned Node of `install.NODE_PACKAGE` is
installed next to it and put first on PATH. MCP servers go to `mcpServers` (trusted: no prompts).
Left out: its own sandboxing (`--sandbox`: we are the sandbox), sessions, sub-agent settings.
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
    mcp_servers_json,
    parse_result_event,
)
from harnessrl.harnesses.install import NODE_BIN, NODE_PACKAGE, npm_install
from harnessrl.sandbox.sandbox import SYSTEM_PATH
from harnessrl.sandbox.spec import ExecResult

VERSION = "0.24.4"
KEY_ENV = "HARNESSRL_API_KEY"


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
        servers = mcp_servers_json(ctx.mcp_servers)
        settings["mcpServers"] = {name: {**spec, "trust": True} for name, spec in servers.items()}
    return settings


class QwenCode(HarnessBase):
    name = "qwen-code"
    version = VERSION
    package = f"@qwen-code/qwen-code@{VERSION}"
    shell_tool = ShellTool("run_shell_command", "command")
    modes = (Mode("openai_chat", 18_364),)
    default_model = "policy"

    def ensure_installed(self, cache_root: Path | None = None) -> Path:
        steps = [[NODE_PACKAGE], [self.package]]
        return npm_install(f"{self.name}-{VERSION}", steps, cache_root, path_prefix=[NODE_BIN])

    def prepare(self, ctx: HarnessContext) -> LaunchSpec:
        model = ctx.endpoint.model or self.default_model
        ctx.write_home_file(".qwen/settings.json", json.dumps(qwen_settings(ctx, model), indent=1))
        exe = str(ctx.install_dir / "node_modules" / ".bin" / "qwen")
        argv = [exe, "-p", ctx.prompt, "--approval-mode=yolo", "--output-format", "stream-json"]
        env = {
            "PATH": f"{ctx.install_dir / NODE_BIN}:{SYSTEM_PATH}",
            KEY_ENV: ctx.endpoint.api_key,
            "QWEN_CODE_SUPPRESS_YOLO_WARNING": "1",
            "NO_COLOR": "1",
        }
        return LaunchSpec(argv=argv, env=env, cwd=ctx.workspace)

    def parse(self, res: ExecResult) -> HarnessResult:
        """Claude Code's stream-json: the last `{"type": "result"}` event."""
        return parse_result_event(res)
