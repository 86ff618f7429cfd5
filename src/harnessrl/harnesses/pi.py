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

from typing import Any

from harnessrl.harnesses.adapter import HarnessContext, HarnessResult, LaunchSpec, ShellTool
from harnessrl.harnesses.base import KEY_ENV, HarnessBase, context_window, max_output, option_modes
from harnessrl.harnesses.parsing import as_dict, json_lines, outcome
from harnessrl.sandbox.spec import ExecResult

VERSION = "0.73.1"
BASE_SUFFIX = {"anthropic-messages": "", "google-generative-ai": "/v1beta"}
"""What pi's SDK for each API expects after the API root (`/v1` for both OpenAI APIs)."""


def pi_models(ctx: HarnessContext, model: str, api: str) -> dict[str, Any]:
    entry = {
        "id": model,
        "name": model,
        "reasoning": False,
        "input": ["text"],
        "contextWindow": context_window(ctx),
        "maxTokens": max_output(ctx),
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
    }
    base = ctx.endpoint.base_url + BASE_SUFFIX.get(api, "/v1")
    provider = {"baseUrl": base, "api": api, "apiKey": KEY_ENV, "models": [entry]}
    return {"providers": {"harnessrl": provider}}


class Pi(HarnessBase):
    name = "pi"
    package = f"@mariozechner/pi-coding-agent@{VERSION}"
    shell_tool = ShellTool("bash", "command")
    modes, choices = option_modes(
        "api",
        {
            "openai-completions": ("openai_chat", 1_537),
            "openai-responses": ("openai_responses", None),
            "anthropic-messages": ("anthropic", None),
            "google-generative-ai": ("gemini", None),
        },
    )

    def prepare(self, ctx: HarnessContext) -> LaunchSpec:
        model = self.model(ctx)
        ctx.write_json(".pi/agent/models.json", pi_models(ctx, model, self.choice(ctx, "api")))
        ctx.write_json(".pi/agent/settings.json", {"enableInstallTelemetry": False, "quietStartup": True})
        argv = [self.executable(ctx), "-p", "--mode", "json", "--no-session", "--provider", "harnessrl"]
        argv += ["--model", model, "--no-extensions", "--no-skills", "--no-prompt-templates", "--no-themes"]
        env = {
            "PI_CODING_AGENT_DIR": f"{ctx.home}/.pi/agent",
            KEY_ENV: ctx.endpoint.api_key,
            "PI_OFFLINE": "1",
            "PI_SKIP_VERSION_CHECK": "1",
            "PI_TELEMETRY": "0",
        }
        return self.launch_spec(ctx, [*argv, ctx.prompt], env)

    def parse(self, res: ExecResult) -> HarnessResult:
        """The `agent_end` event holds every message: the final message is the text of the last
        assistant one; its `stopReason` `error` / `aborted` (with `errorMessage`) is the harness's error."""
        messages: list[Any] | None = None
        for event in json_lines(res.stdout):
            if event.get("type") == "agent_end" and isinstance(event.get("messages"), list):
                messages = event["messages"]
        assistant = [as_dict(m) for m in messages or () if as_dict(m).get("role") == "assistant"]
        last = assistant[-1] if assistant else {}
        blocks = last["content"] if isinstance(last.get("content"), list) else []
        final = "".join(str(b.get("text", "")) for b in map(as_dict, blocks) if b.get("type") == "text")
        failed = last.get("stopReason") in ("error", "aborted")
        errors = [f"{last.get('stopReason')}: {last.get('errorMessage', '')}".strip(": ")] if failed else []
        return outcome(
            res, done=bool(assistant), final=final.strip(), errors=errors, turns=len(assistant) or None
        )
