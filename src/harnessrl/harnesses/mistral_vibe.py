"""Mistral Vibe (PyPI `mistral-vibe`), headless: `vibe -p PROMPT --output json --agent auto-approve`.

A Python harness on the Python 3.13 runtime (`python = "3.13"`: it needs Python >= 3.12; see
`images/runtime.py`). `vibe` is a Rust front end (bundled in the wheel) that runs the package's Python
`vibe-app-server`. `$VIBE_HOME/config.toml` (in the sandbox HOME) names one provider at the endpoint
(`backend = "generic"`: OpenAI Chat Completions, streamed) and one model on it, pinned as the active
model; telemetry, update checks, the model catalog, connectors and notifications are off.
`--agent auto-approve` runs every tool without asking. MCP servers are `[[mcp_servers]]` entries
(`transport = "stdio"`). Left out: its Mistral login, voice, connectors, sessions, subagents.
"""

from __future__ import annotations

from harnessrl.harnesses.adapter import HarnessContext, LaunchSpec, Mode, ShellTool
from harnessrl.harnesses.base import KEY_ENV, HarnessBase, TomlSection, context_window, toml_document
from harnessrl.harnesses.parsing import parse_plain_text

VERSION = "3.0.2"
ALIAS = "harnessrl"


def vibe_config(ctx: HarnessContext, model: str) -> str:
    top = {
        "active_model": ALIAS,
        "enable_telemetry": False,
        "enable_update_checks": False,
        "enable_auto_update": False,
        "enable_notifications": False,
        "enable_connectors": False,
        "experimental_enable_model_catalog": False,
        "include_commit_signature": False,
    }
    provider = {
        "name": ALIAS,
        "api_base": ctx.endpoint.base_url + "/v1",
        "api_key_env_var": KEY_ENV,
        "backend": "generic",
    }
    entry = {"name": model, "provider": ALIAS, "alias": ALIAS, "max_context_length": context_window(ctx)}
    sections: list[TomlSection] = [("", top), ("[[providers]]", provider), ("[[models]]", entry)]
    for s in ctx.mcp_servers:
        server = {"name": s.name, "transport": "stdio", "command": s.command, "env": s.env or None}
        sections.append(("[[mcp_servers]]", server))
    return toml_document(*sections)


class MistralVibe(HarnessBase):
    name = "mistral-vibe"
    package = f"mistral-vibe=={VERSION}"
    installer = "pypi"
    python = "3.13"
    command = "vibe"
    shell_tool = ShellTool("bash", "command")
    modes = (Mode("openai_chat", 8_370),)

    def prepare(self, ctx: HarnessContext) -> LaunchSpec:
        ctx.write_home_file(".vibe/config.toml", vibe_config(ctx, self.model(ctx)))
        argv = [self.executable(ctx), "-p", ctx.prompt, "--output", "text", "--agent", "auto-approve"]
        env = {
            "VIBE_HOME": f"{ctx.home}/.vibe",
            KEY_ENV: ctx.endpoint.api_key,
            "PATH": self.launch_path(ctx),
        }
        return self.launch_spec(ctx, argv, env)

    parse = staticmethod(parse_plain_text)
