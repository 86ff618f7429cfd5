"""pi (`@mariozechner/pi-coding-agent`), headless: `pi -p --mode json --no-session --provider harnessrl`.

pi reads custom providers from `$PI_CODING_AGENT_DIR/models.json` (default `~/.pi/agent`); ours is
one provider, `harnessrl`, at the endpoint, with one model. Its `api` is an option:
`openai-completions` (default: Chat Completions), `openai-responses`, `anthropic-messages` or
`google-generative-ai` (the Gemini API); consecutive calls splice in every one (they are exact
prefixes of each other but for Anthropic's moving `cache_control`; see the harness-traffic README).
`PI_OFFLINE=1` turns off every startup network operation (update and package checks, the install
ping); settings.json also turns the install ping off and quiets the startup header. Its four tools
(read, bash, edit, write) run without asking. pi has no MCP client by design, so MCP servers are not
started. Left out: sessions, extensions, skills and prompt templates (their discovery is off), OAuth
logins, thinking levels.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harnessrl.harnesses.adapter import HarnessBase, Mode, ShellTool
from harnessrl.harnesses.base import HarnessContext, HarnessResult, LaunchSpec, json_lines, stderr_tail
from harnessrl.harnesses.install import npm_install
from harnessrl.sandbox.spec import ExecResult

VERSION = "0.73.1"
APIS = ("openai-completions", "openai-responses", "anthropic-messages", "google-generative-ai")
KEY_ENV = "HARNESSRL_API_KEY"
BASE_SUFFIX = {"anthropic-messages": "", "google-generative-ai": "/v1beta"}
"""What pi's SDK for each API expects after the API root (`/v1` for both OpenAI APIs)."""


def pi_models(ctx: HarnessContext, model: str, api: str) -> dict[str, Any]:
    entry = {
        "id": model,
        "name": model,
        "reasoning": False,
        "input": ["text"],
        "contextWindow": int(ctx.options.get("context_window", 131072)),
        "maxTokens": int(ctx.options.get("max_tokens", 8192)),
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
    }
    base = ctx.endpoint.base_url + BASE_SUFFIX.get(api, "/v1")
    provider = {"baseUrl": base, "api": api, "apiKey": KEY_ENV, "models": [entry]}
    return {"providers": {"harnessrl": provider}}


class Pi(HarnessBase):
    name = "pi"
    version = VERSION
    package = f"@mariozechner/pi-coding-agent@{VERSION}"
    shell_tool = ShellTool("bash", "command")
    modes = (
        Mode("openai_chat", 1_537, note="api openai-completions"),
        Mode("openai_responses", None, {"api": "openai-responses"}, "api openai-responses"),
        Mode("anthropic", None, {"api": "anthropic-messages"}, "api anthropic-messages"),
        Mode("gemini", None, {"api": "google-generative-ai"}, "api google-generative-ai"),
    )
    default_model = "policy"

    def ensure_installed(self, cache_root: Path | None = None) -> Path:
        return npm_install(f"{self.name}-{VERSION}", [[self.package]], cache_root)

    def prepare(self, ctx: HarnessContext) -> LaunchSpec:
        model = ctx.endpoint.model or self.default_model
        api = str(ctx.options.get("api", APIS[0]))
        if api not in APIS:
            raise ValueError(f"pi api must be one of {APIS}, not {api!r}")
        ctx.write_home_file(".pi/agent/models.json", json.dumps(pi_models(ctx, model, api), indent=1))
        settings = {"enableInstallTelemetry": False, "quietStartup": True}
        ctx.write_home_file(".pi/agent/settings.json", json.dumps(settings, indent=1))
        exe = str(ctx.install_dir / "node_modules" / ".bin" / "pi")
        argv = [exe, "-p", "--mode", "json", "--no-session", "--provider", "harnessrl", "--model", model]
        argv += ["--no-extensions", "--no-skills", "--no-prompt-templates", "--no-themes", ctx.prompt]
        env = {
            "PI_CODING_AGENT_DIR": f"{ctx.home}/.pi/agent",
            KEY_ENV: ctx.endpoint.api_key,
            "PI_OFFLINE": "1",
            "PI_SKIP_VERSION_CHECK": "1",
            "PI_TELEMETRY": "0",
            "NO_COLOR": "1",
        }
        return LaunchSpec(argv=argv, env=env, cwd=ctx.workspace)

    def parse(self, res: ExecResult) -> HarnessResult:
        """The `agent_end` event holds every message: the final message is the text of the last
        assistant one; its `stopReason` `error` / `aborted` (with `errorMessage`) is the harness's error."""
        messages: list[Any] | None = None
        for event in json_lines(res.stdout):
            if event.get("type") == "agent_end" and isinstance(event.get("messages"), list):
                messages = event["messages"]
        if messages is None:
            return HarnessResult(
                ok=False, exit_code=res.returncode, timed_out=res.timed_out, error=stderr_tail(res)
            )
        assistant = [m for m in messages if isinstance(m, dict) and m.get("role") == "assistant"]
        last = assistant[-1] if assistant else {}
        content = last.get("content")
        blocks = content if isinstance(content, list) else []
        final = "".join(
            str(b.get("text", "")) for b in blocks if isinstance(b, dict) and b.get("type") == "text"
        )
        failed = last.get("stopReason") in ("error", "aborted")
        ok = res.returncode == 0 and bool(assistant) and not failed and not res.timed_out
        error = ""
        if failed:
            error = f"{last.get('stopReason')}: {last.get('errorMessage', '')}".strip(": ")
        elif not ok:
            error = stderr_tail(res)
        return HarnessResult(
            ok=ok,
            exit_code=res.returncode,
            final_message=final.strip(),
            timed_out=res.timed_out,
            error=error,
            turns=len(assistant) or None,
        )
