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

import json
from pathlib import Path
from typing import Any

from harnessrl.harnesses.adapter import HarnessBase, Mode, ShellTool
from harnessrl.harnesses.base import HarnessContext, HarnessResult, LaunchSpec, json_lines, stderr_tail
from harnessrl.harnesses.install import npm_install
from harnessrl.sandbox.spec import ExecResult

VERSION = "1.0.102"
WIRE_APIS = ("completions", "responses")


def mcp_config(ctx: HarnessContext) -> dict[str, Any]:
    servers = {
        s.name: {
            "type": "local",
            "command": s.command[0],
            "args": s.command[1:],
            "env": s.env,
            "tools": ["*"],
        }
        for s in ctx.mcp_servers
    }
    return {"mcpServers": servers}


class Copilot(HarnessBase):
    name = "copilot"
    version = VERSION
    package = f"@github/copilot@{VERSION}"
    shell_tool = ShellTool("bash", "command", extra={"description": "Run the command"})
    """Its `bash` tool requires a `description` beside the command."""
    modes = (
        Mode("openai_chat", 12_273, note="wire_api completions"),
        Mode("openai_responses", None, {"wire_api": "responses"}, "wire_api responses"),
    )
    default_model = "policy"

    def ensure_installed(self, cache_root: Path | None = None) -> Path:
        return npm_install(f"{self.name}-{VERSION}", [[self.package]], cache_root)

    def prepare(self, ctx: HarnessContext) -> LaunchSpec:
        model = ctx.endpoint.model or self.default_model
        wire = str(ctx.options.get("wire_api", WIRE_APIS[0]))
        if wire not in WIRE_APIS:
            raise ValueError(f"copilot wire_api must be one of {WIRE_APIS}, not {wire!r}")
        home = f"{ctx.home}/.copilot"
        if ctx.mcp_servers:
            ctx.write_home_file(".copilot/mcp-config.json", json.dumps(mcp_config(ctx), indent=1))
        exe = str(ctx.install_dir / "node_modules" / ".bin" / "copilot")
        argv = [exe, "-p", ctx.prompt, "--allow-all", "--output-format", "json", "--no-auto-update"]
        argv += ["--disable-builtin-mcps", "--disable-client-telemetry", "--model", model]
        env = {
            "COPILOT_HOME": home,
            "COPILOT_OFFLINE": "true",
            "COPILOT_AUTO_UPDATE": "false",
            "COPILOT_PROVIDER_BASE_URL": ctx.endpoint.base_url + "/v1",
            "COPILOT_PROVIDER_TYPE": "openai",
            "COPILOT_PROVIDER_API_KEY": ctx.endpoint.api_key,
            "COPILOT_PROVIDER_WIRE_API": wire,
            "COPILOT_PROVIDER_MAX_PROMPT_TOKENS": str(int(ctx.options.get("context_window", 131072))),
            "COPILOT_PROVIDER_MAX_OUTPUT_TOKENS": "8192",
            "COPILOT_MODEL": model,
            "NO_COLOR": "1",
        }
        return LaunchSpec(argv=argv, env=env, cwd=ctx.workspace)

    def parse(self, res: ExecResult) -> HarnessResult:
        """JSONL events: `assistant.message` (the last one's `content` is the final message; one per
        model turn), `*.error` events, and a closing `result` with the `exitCode`."""
        final, errors, turns, exit_code = "", [], 0, None
        for event in json_lines(res.stdout):
            kind = str(event.get("type", ""))
            data = event.get("data")
            data = data if isinstance(data, dict) else {}
            if kind == "assistant.message":
                final, turns = str(data.get("content") or ""), turns + 1
            elif kind == "error" or kind.endswith(".error"):
                errors.append(str(data.get("message") or data or event.get("message", kind)))
            elif kind == "result":
                exit_code = event.get("exitCode")
        ok = res.returncode == 0 and exit_code == 0 and not errors and not res.timed_out
        error = "; ".join(errors) if errors else ("" if ok else stderr_tail(res))
        return HarnessResult(
            ok=ok,
            exit_code=res.returncode,
            final_message=final.strip(),
            timed_out=res.timed_out,
            error=error,
            turns=turns or None,
        )
