"""Continue CLI (`@continuedev/cli`, command `cn`), headless: `cn -p --config FILE --auto PROMPT`.

`cn` reads an assistant config (YAML; JSON is valid YAML) given by `--config`; ours declares one
model, provider `openai` (Chat Completions) at the endpoint, with tool use. `CONTINUE_GLOBAL_DIR`
keeps its state in the sandbox HOME; telemetry and metrics are off by environment, and
`CONTINUE_CLI_AUTO_UPDATED` tells it that it has just updated (no self-update). `--auto` allows every
tool. The final message is what `-p` prints: the last assistant text. MCP servers go to the config's
`mcpServers` list. Left out: Continue Hub logins and slugs, organisations, sessions (`--resume`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harnessrl.harnesses.adapter import HarnessBase, Mode, ShellTool
from harnessrl.harnesses.base import HarnessContext, HarnessResult, LaunchSpec, parse_plain_text
from harnessrl.harnesses.install import npm_install
from harnessrl.sandbox.spec import ExecResult

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
        "defaultCompletionOptions": {"contextLength": int(ctx.options.get("context_window", 131072))},
    }
    config: dict[str, Any] = {"name": "harnessrl", "version": "1.0.0", "schema": "v1", "models": [entry]}
    if ctx.mcp_servers:
        config["mcpServers"] = [
            {"name": s.name, "command": s.command[0], "args": s.command[1:], "env": s.env}
            for s in ctx.mcp_servers
        ]
    return config


class ContinueCli(HarnessBase):
    name = "continue"
    version = VERSION
    package = f"@continuedev/cli@{VERSION}"
    shell_tool = ShellTool("Bash", "command")
    modes = (Mode("openai_chat", 2_033),)
    default_model = "policy"

    def ensure_installed(self, cache_root: Path | None = None) -> Path:
        return npm_install(f"{self.name}-{VERSION}", [[self.package]], cache_root)

    def prepare(self, ctx: HarnessContext) -> LaunchSpec:
        model = ctx.endpoint.model or self.default_model
        cfg = ctx.write_home_file(".continue/config.yaml", json.dumps(continue_config(ctx, model), indent=1))
        exe = str(ctx.install_dir / "node_modules" / ".bin" / "cn")
        argv = [exe, "-p", "--config", cfg, "--auto", ctx.prompt]
        env = {
            "CONTINUE_GLOBAL_DIR": f"{ctx.home}/.continue",
            "CONTINUE_CLI_ENABLE_TELEMETRY": "0",
            "CONTINUE_METRICS_ENABLED": "0",
            "CONTINUE_CLI_AUTO_UPDATED": "true",
            "NO_COLOR": "1",
        }
        return LaunchSpec(argv=argv, env=env, cwd=ctx.workspace)

    def parse(self, res: ExecResult) -> HarnessResult:
        """`-p` prints the final assistant text on stdout and exits non-zero on an error."""
        return parse_plain_text(res)
