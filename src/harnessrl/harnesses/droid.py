"""Factory Droid (`@factory/cli`, command `droid`), headless: `droid exec --skip-permissions-unsafe -o json
-m custom:MODEL PROMPT`.

Droid runs on bring-your-own-key models without a Factory login: `$HOME/.factory/settings.json`
declares one entry of `customModels` at the endpoint (its key read from an env var through `${VAR}`),
picked as `custom:MODEL`. Its `provider` is option `provider`: `generic-chat-completion-api`
(default: OpenAI Chat Completions, streamed), `openai` (the Responses API) or `anthropic` (Messages;
its base URL without `/v1`). `FACTORY_AIRGAP_ENABLED=1` turns off its telemetry, update and cloud
calls (without it every run waits on telemetry.factory.ai); auto-update and the OS keyring are off
too. MCP servers go to `$HOME/.factory/mcp.json`. Its shell tool is `Execute(command, summary)`:
the summary must be a capitalised 3-8 word sentence.

`@factory/cli` itself is a Node shim whose platform binary is an optional dependency pinned to the
shim's version; the registry lacks `@factory/cli-linux-x64@0.225.1` (the newest shim), so the shim
would fall back to downloading the binary. We pin the platform package (a Bun-compiled binary,
`bin/droid`, no install script) on its own and run that binary directly.
Left out: Factory accounts and cloud sessions, missions, spec mode, its own sandboxing, skills.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harnessrl.harnesses.adapter import HarnessContext, LaunchSpec, ShellTool
from harnessrl.harnesses.base import KEY_ENV, HarnessBase, context_window, max_output, option_modes
from harnessrl.harnesses.parsing import parse_result_event

VERSION = "0.225.2"
PLATFORM_PACKAGE = "@factory/cli-linux-x64"


def droid_settings(ctx: HarnessContext, model: str, provider: str) -> dict[str, Any]:
    entry = {
        "model": model,
        "displayName": model,
        "baseUrl": ctx.endpoint.base_url + ("" if provider == "anthropic" else "/v1"),
        "apiKey": "${" + KEY_ENV + "}",
        "provider": provider,
        "maxOutputTokens": max_output(ctx),
        "maxContextLimit": context_window(ctx),
    }
    return {"customModels": [entry]}


class Droid(HarnessBase):
    name = "droid"
    package = f"{PLATFORM_PACKAGE}@{VERSION}"
    shell_tool = ShellTool("Execute", "command", extra={"summary": "Run the task command"})
    modes, choices = option_modes(
        "provider",
        {
            "generic-chat-completion-api": ("openai_chat", 7_952),
            "openai": ("openai_responses", 8_298),
            "anthropic": ("anthropic", 8_037),
        },
    )

    def entry(self, install_dir: Path) -> Path:
        """The platform package's binary (it declares no `bin`, so nothing is in `.bin`)."""
        return install_dir / "node_modules" / PLATFORM_PACKAGE / "bin" / self.command

    def prepare(self, ctx: HarnessContext) -> LaunchSpec:
        model = self.model(ctx)
        ctx.write_json(".factory/settings.json", droid_settings(ctx, model, self.choice(ctx, "provider")))
        self.write_mcp_settings(ctx, ".factory/mcp.json", first={"type": "stdio"})
        argv = [
            self.executable(ctx),
            "exec",
            "--skip-permissions-unsafe",
            "-o",
            "json",
            "-m",
            f"custom:{model}",
        ]
        env = {
            KEY_ENV: ctx.endpoint.api_key,
            "FACTORY_AIRGAP_ENABLED": "1",
            "FACTORY_DROID_AUTO_UPDATE_ENABLED": "false",
            "FACTORY_DISABLE_KEYRING": "1",
        }
        return self.launch_spec(ctx, [*argv, ctx.prompt], env)

    parse = staticmethod(parse_result_event)
    """`-o json` prints one `{"type": "result"}` object (Claude Code's shape)."""
