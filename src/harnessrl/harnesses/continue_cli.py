"""Continue CLI (`@continuedev/cli`, command `cn`), headless: `cn -p --config FILE --auto PROMPT`.

`cn` reads an assistant config (YAML; JSON is valid YAML) given by `--config`; ours declares one
model, provider `openai` (Chat Completions) at the endpoint, with tool use. `CONTINUE_GLOBAL_DIR`
keeps its state in the sandbox HOME; telemetry and metrics are off by environment, and
`CONTINUE_CLI_AUTO_UPDATED` tells it that it has just updated (no self-update). `--auto` allows every
tool. The final message is what `-p` prints: the last assistant text. MCP servers go to the config's
`mcpServers` list. Left out: Continue Hub logins and slugs, organisations, sessions (`--resume`).
"""

from __future__ import annotations

from typing import Any

from harnessrl.harnesses.adapter import HarnessContext, LaunchSpec, Mode, ShellTool
from harnessrl.harnesses.base import HarnessBase, context_window, mcp_servers_json
from harnessrl.harnesses.parsing import parse_plain_text

VERSION = "1.5.47"


def continue_config(ctx: HarnessContext, model: str) -> dict[str, Any]:
    entry = {
        "name": model,
        "provider": "openai",
        "model": model,
        "apiBase": ctx.endpoint.base_url + "/v1",
        "apiKey": ctx.endpoint.api_key,
        "roles": ["chat", "edit", "apply"],
        "capabilities": ["tool_use"],
        "defaultCompletionOptions": {"contextLength": context_window(ctx)},
    }
    config: dict[str, Any] = {"name": "harnessrl", "version": "1.0.0", "schema": "v1", "models": [entry]}
    if ctx.mcp_servers:
        config["mcpServers"] = [{"name": n, **s} for n, s in mcp_servers_json(ctx.mcp_servers).items()]
    return config


class ContinueCli(HarnessBase):
    name = "continue"
    package = f"@continuedev/cli@{VERSION}"
    command = "cn"
    shell_tool = ShellTool("Bash", "command")
    modes = (Mode("openai_chat", 2_033),)

    def prepare(self, ctx: HarnessContext) -> LaunchSpec:
        cfg = ctx.write_json(".continue/config.yaml", continue_config(ctx, self.model(ctx)))
        argv = [self.executable(ctx), "-p", "--config", cfg, "--auto", ctx.prompt]
        env = {
            "CONTINUE_GLOBAL_DIR": f"{ctx.home}/.continue",
            "CONTINUE_CLI_ENABLE_TELEMETRY": "0",
            "CONTINUE_METRICS_ENABLED": "0",
            "CONTINUE_CLI_AUTO_UPDATED": "true",
        }
        return self.launch_spec(ctx, argv, env)

    parse = staticmethod(parse_plain_text)
    """`-p` prints the final assistant text on stdout and exits non-zero on an error."""
