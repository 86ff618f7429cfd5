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

from typing import Any

from harnessrl.harnesses.adapter import HarnessContext, HarnessResult, LaunchSpec, Mode, ShellTool
from harnessrl.harnesses.base import KEY_ENV, HarnessBase, context_window
from harnessrl.harnesses.parsing import as_dict, json_lines, outcome
from harnessrl.sandbox.spec import ExecResult

VERSION = "1.18.33"
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
    limit = {"context": context_window(ctx), "output": 8192}
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


def parse_opencode_events(res: ExecResult, step: str) -> HarnessResult:
    """opencode's (and Kilo's) JSON events: the last `text` part is the final message, `error`
    events are errors, each `step` event (`step_finish`, Kilo's `step_start`) one turn."""
    final, errors, steps = "", [], 0
    for event in json_lines(res.stdout):
        kind, part = event.get("type"), as_dict(event.get("part"))
        if kind == "text" and isinstance(part.get("text"), str):
            final = part["text"]
        elif kind == step:
            steps += 1
        elif kind == "error":
            err = event.get("error")
            message = as_dict(as_dict(err).get("data")).get("message")
            errors.append(str(message or (err.get("name") if isinstance(err, dict) else err)))
    return outcome(res, done=steps > 0, final=final.strip(), errors=errors, turns=steps or None)


class Opencode(HarnessBase):
    name = "opencode"
    package = f"opencode-ai@{VERSION}"
    install_scripts = ("opencode-ai",)
    """Its postinstall copies the native binary of its platform package over the `opencode` stub."""
    shell_tool = ShellTool("bash", "command", extra={"description": "Run the command"})
    modes = (Mode("openai_chat", 7_731),)

    def prepare(self, ctx: HarnessContext) -> LaunchSpec:
        model = self.model(ctx)
        cfg = ctx.write_json(".config/opencode/harnessrl.json", opencode_config(ctx, model))
        argv = [self.executable(ctx), "run", "--format", "json", "--auto", "--title", "rollout"]
        argv += ["-m", f"harnessrl/{model}", ctx.prompt]  # a given --title: no title-generation call
        env = {"PATH": self.launch_path(ctx), "OPENCODE_CONFIG": cfg, KEY_ENV: ctx.endpoint.api_key}
        env |= dict.fromkeys(QUIET, "1")
        return self.launch_spec(ctx, argv, env)

    def parse(self, res: ExecResult) -> HarnessResult:
        return parse_opencode_events(res, "step_finish")
