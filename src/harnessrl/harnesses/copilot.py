"""GitHub Copilot CLI (`@github/copilot`), headless: `copilot -p PROMPT --allow-all --output-format json`.

Its custom-provider mode (BYOK) is configured by environment only: `COPILOT_PROVIDER_BASE_URL` at the
endpoint, provider type `openai`, wire API an option (`completions`, the default: Chat Completions;
or `responses`), the model named by `COPILOT_MODEL`. `COPILOT_OFFLINE=true` skips every other network
access (GitHub sign-in, telemetry, web tools, the GitHub MCP server, auto-update); `--no-auto-update`,
`--disable-builtin-mcps` and `--disable-client-telemetry` say the same on the command line, and
`--allow-all` approves tools, paths and URLs. State lives in `COPILOT_HOME` in the sandbox HOME. MCP
servers go to `$COPILOT_HOME/mcp-config.json`. Left out: GitHub sign-in and Copilot's own models,
fleet mode, sessions, sharing.
"""

from __future__ import annotations

from harnessrl.harnesses.adapter import HarnessContext, HarnessResult, LaunchSpec, ShellTool
from harnessrl.harnesses.base import HarnessBase, context_window, option_modes
from harnessrl.harnesses.parsing import as_dict, json_lines, outcome
from harnessrl.sandbox.spec import ExecResult

VERSION = "1.0.102"


class Copilot(HarnessBase):
    name = "copilot"
    package = f"@github/copilot@{VERSION}"
    shell_tool = ShellTool("bash", "command", extra={"description": "Run the command"})
    """Its `bash` tool requires a `description` beside the command."""
    modes, choices = option_modes(
        "wire_api",
        {
            "completions": ("openai_chat", 12_273),
            "responses": ("openai_responses", None),
        },
    )

    def prepare(self, ctx: HarnessContext) -> LaunchSpec:
        model = self.model(ctx)
        self.write_mcp_settings(
            ctx, ".copilot/mcp-config.json", first={"type": "local"}, last={"tools": ["*"]}
        )
        argv = [self.executable(ctx), "-p", ctx.prompt, "--allow-all", "--output-format", "json"]
        argv += ["--no-auto-update", "--disable-builtin-mcps", "--disable-client-telemetry", "--model", model]
        env = {
            "COPILOT_HOME": f"{ctx.home}/.copilot",
            "COPILOT_OFFLINE": "true",
            "COPILOT_AUTO_UPDATE": "false",
            "COPILOT_PROVIDER_BASE_URL": ctx.endpoint.base_url + "/v1",
            "COPILOT_PROVIDER_TYPE": "openai",
            "COPILOT_PROVIDER_API_KEY": ctx.endpoint.api_key,
            "COPILOT_PROVIDER_WIRE_API": self.choice(ctx, "wire_api"),
            "COPILOT_PROVIDER_MAX_PROMPT_TOKENS": str(context_window(ctx)),
            "COPILOT_PROVIDER_MAX_OUTPUT_TOKENS": "8192",
            "COPILOT_MODEL": model,
        }
        return self.launch_spec(ctx, argv, env)

    def parse(self, res: ExecResult) -> HarnessResult:
        """JSONL events: `assistant.message` (the last one's `content` is the final message; one per
        model turn), `*.error` events, and a closing `result` with the `exitCode`."""
        final, errors, turns, exit_code = "", [], 0, None
        for event in json_lines(res.stdout):
            kind, data = str(event.get("type", "")), as_dict(event.get("data"))
            if kind == "assistant.message":
                final, turns = str(data.get("content") or ""), turns + 1
            elif kind == "error" or kind.endswith(".error"):
                errors.append(str(data.get("message") or data or event.get("message", kind)))
            elif kind == "result":
                exit_code = event.get("exitCode")
        return outcome(res, done=exit_code == 0, final=final.strip(), errors=errors, turns=turns or None)
