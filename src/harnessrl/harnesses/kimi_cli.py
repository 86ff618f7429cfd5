"""Kimi CLI (PyPI `kimi-cli`, Moonshot AI), headless: `kimi --print -p PROMPT --yolo`.

A Python harness on the Python 3.13 runtime (`python = "3.13"`: it needs Python >= 3.12; see
`images/runtime.py`). Its lockfile leaves out `ripgrepy` (`pip_left_out`). `--config-file` names a
JSON config in the sandbox HOME with one provider at the endpoint (`openai_legacy`: OpenAI Chat
Completions) and one model on it as the default; telemetry off. `--print` runs non-interactively,
`--yolo` approves every tool. MCP servers go in `--mcp-config` (`{"mcpServers": ...}`). Left out: its
Moonshot login, web search and fetch services, sessions, subagents.
"""

from __future__ import annotations

import json
from types import MappingProxyType

from harnessrl.harnesses.adapter import HarnessContext, LaunchSpec, Mode, ShellTool
from harnessrl.harnesses.base import HarnessBase, context_window, mcp_settings
from harnessrl.harnesses.parsing import parse_plain_text

VERSION = "1.51.0"
ALIAS = "harnessrl"


class KimiCli(HarnessBase):
    name = "kimi-cli"
    package = f"kimi-cli=={VERSION}"
    installer = "pypi"
    python = "3.13"
    pip_left_out = MappingProxyType(
        {
            "ripgrepy": "only an sdist on PyPI (no wheel of 2.2.0); kimi-cli 1.51.0 never imports it: "
            "its Grep tool runs `rg` itself"
        }
    )
    command = "kimi"
    shell_tool = ShellTool("Shell", "command")
    modes = (Mode("openai_chat", 12_267),)

    def prepare(self, ctx: HarnessContext) -> LaunchSpec:
        model = {"provider": ALIAS, "model": self.model(ctx), "max_context_size": context_window(ctx)}
        provider = {
            "type": "openai_legacy",
            "base_url": ctx.endpoint.base_url + "/v1",
            "api_key": ctx.endpoint.api_key,
        }
        config = {
            "default_model": ALIAS,
            "models": {ALIAS: model},
            "providers": {ALIAS: provider},
            "telemetry": False,
        }
        path = ctx.write_json(".kimi/config.json", config)
        argv = [self.executable(ctx), "--print", "--yolo", "--config-file", path, "-p", ctx.prompt]
        argv += ["--output-format", "text", "--final-message-only"]
        if ctx.mcp_servers:
            argv += ["--mcp-config", json.dumps(mcp_settings(ctx.mcp_servers))]
        env = {"KIMI_SHARE_DIR": f"{ctx.home}/.kimi", "PATH": self.launch_path(ctx)}
        return self.launch_spec(ctx, argv, env)

    parse = staticmethod(parse_plain_text)
