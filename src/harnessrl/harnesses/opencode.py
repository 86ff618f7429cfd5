"""opencode (`opencode-ai`), headless: `opencode run --format json --auto -m harnessrl/M PROMPT`.

The npm package is a launcher; its optional dependency `opencode-linux-x64` ships the native (Bun)
binary. It speaks OpenAI Chat Completions through the bundled `@ai-sdk/openai-compatible` provider
(`POST {baseURL}/chat/completions`, streamed). Everything is set in one config file
(`$OPENCODE_CONFIG`, in the sandbox HOME): a provider `harnessrl` at the endpoint with its key read
from an env var, one model, autoupdate and sharing off, every permission `allow` (with `--auto`: no
prompts); env switches turn off the models.dev fetch, LSP downloads, default plugins, and reading
Claude Code's files. MCP servers go to `mcp` (type `local`).
Left out: sessions (`--continue`), `opencode serve`/`--attach`, agents and their per-agent models.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harnessrl.harnesses.adapter import HarnessBase, Mode, ShellTool
from harnessrl.harnesses.base import HarnessContext, HarnessResult, LaunchSpec, json_lines, stderr_tail
from harnessrl.harnesses.install import npm_install
from harnessrl.sandbox.sandbox import SYSTEM_PATH
from harnessrl.sandbox.spec import ExecResult

VERSION = "1.18.33"
KEY_ENV = "HARNESSRL_API_KEY"
QUIET = (
    "OPENCODE_DISABLE_AUTOUPDATE",
    "OPENCODE_DISABLE_MODELS_FETCH",
    "OPENCODE_DISABLE_LSP_DOWNLOAD",
    "OPENCODE_DISABLE_DEFAULT_PLUGINS",
    "OPENCODE_DISABLE_SHARE",
    "OPENCODE_DISABLE_CLAUDE_CODE",
    "OPENCODE_DISABLE_EXTERNAL_SKILLS",
)
"""Env switches set to 1: no network but the model's, nothing read from outside the sandbox HOME."""


def opencode_config(ctx: HarnessContext, model: str, **model_extra: Any) -> dict[str, Any]:
    """The config of opencode and its forks (Kilo): one OpenAI-compatible provider at the endpoint,
    one model (with `model_extra` in its entry), every permission allowed, MCP servers as local ones."""
    limit = {"context": int(ctx.options.get("context_window", 131072)), "output": 8192}
    provider = {
        "npm": "@ai-sdk/openai-compatible",
        "name": "harnessrl",
        "options": {"baseURL": ctx.endpoint.base_url + "/v1", "apiKey": f"{{env:{KEY_ENV}}}"},
        "models": {model: {"name": model, **model_extra, "limit": limit}},
    }
    config: dict[str, Any] = {
        "provider": {"harnessrl": provider},
        "model": f"harnessrl/{model}",
        "small_model": f"harnessrl/{model}",
        "autoupdate": False,
        "share": "disabled",
        "permission": {"edit": "allow", "bash": "allow", "webfetch": "allow", "external_directory": "allow"},
    }
    if ctx.mcp_servers:
        config["mcp"] = {
            s.name: {"type": "local", "command": list(s.command), "environment": s.env, "enabled": True}
            for s in ctx.mcp_servers
        }
    return config


class Opencode(HarnessBase):
    name = "opencode"
    version = VERSION
    package = f"opencode-ai@{VERSION}"
    shell_tool = ShellTool("bash", "command", extra={"description": "Run the command"})
    modes = (Mode("openai_chat", 7_731),)
    default_model = "policy"

    def ensure_installed(self, cache_root: Path | None = None) -> Path:
        return npm_install(f"{self.name}-{VERSION}", [[self.package]], cache_root)

    def prepare(self, ctx: HarnessContext) -> LaunchSpec:
        model = ctx.endpoint.model or self.default_model
        cfg = ctx.write_home_file(".config/opencode/harnessrl.json", json.dumps(opencode_config(ctx, model)))
        exe = str(ctx.install_dir / "node_modules" / ".bin" / "opencode")
        argv = [exe, "run", "--format", "json", "--auto", "--title", "rollout", "-m", f"harnessrl/{model}"]
        argv.append(ctx.prompt)  # a given --title: no title-generation call before the first turn
        env = {"PATH": SYSTEM_PATH, "OPENCODE_CONFIG": cfg, KEY_ENV: ctx.endpoint.api_key, "NO_COLOR": "1"}
        env.update(dict.fromkeys(QUIET, "1"))
        return LaunchSpec(argv=argv, env=env, cwd=ctx.workspace)

    def parse(self, res: ExecResult) -> HarnessResult:
        """JSON events: the last `text` part is the final message; `error` events are errors."""
        final, errors, steps = "", [], 0
        for event in json_lines(res.stdout):
            kind, part = event.get("type"), event.get("part")
            part = part if isinstance(part, dict) else {}
            if kind == "text" and isinstance(part.get("text"), str):
                final = part["text"]
            elif kind == "step_finish":
                steps += 1
            elif kind == "error":
                err = event.get("error")
                data = err.get("data") if isinstance(err, dict) else None
                message = data.get("message") if isinstance(data, dict) else None
                errors.append(str(message or (err.get("name") if isinstance(err, dict) else err)))
        ok = res.returncode == 0 and not errors and not res.timed_out and steps > 0
        error = "; ".join(errors) if errors else ("" if ok else stderr_tail(res))
        return HarnessResult(
            ok=ok,
            exit_code=res.returncode,
            final_message=final,
            timed_out=res.timed_out,
            error=error,
            turns=steps or None,
        )
