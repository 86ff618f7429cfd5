"""Command Code (`command-code`, command `cmd`), headless: `cmd -p PROMPT --model harnessrl/MODEL --yolo
--output-format json --local-only`.

Bring-your-own-key providers live in `$HOME/.commandcode/providers.json`: ours is one provider,
`harnessrl`, at the endpoint, with one model, its key an `$ENV_VAR` reference (raw keys are refused
there). Its wire is option `api`: `openai-completions` (default: Chat Completions, streamed),
`openai-responses` or `anthropic-messages`. `--local-only` (`CMD_LOCAL_ONLY=1`) sends nothing to
Command Code; print mode still refuses to start without a Command Code key, so
`COMMAND_CODE_API_KEY` holds a placeholder that is never sent. Update checks
(`COMMANDCODE_SKIP_UPDATES`) and OpenTelemetry are off; `--yolo` runs its tools without asking.
`--output-format json` prints NDJSON events ending in one `{"type": "result"}` line.

It needs Node >= 22 (the pinned Node is locked beside it). Its lockfile also pins
`@opentelemetry/semantic-conventions` to 1.43.0: 1.44 and later are ES modules without a default
export, which its `import X from "@opentelemetry/semantic-conventions"` needs (with the newest the
CLI dies at load). MCP servers go to `$HOME/.commandcode/mcp.json` (user scope, `transport: stdio`).
Left out: Command Code accounts, sessions, mods, skills.
"""

from __future__ import annotations

from typing import Any

from harnessrl.harnesses.adapter import HarnessContext, HarnessResult, LaunchSpec, ShellTool
from harnessrl.harnesses.base import KEY_ENV, HarnessBase, context_window, max_output, option_modes
from harnessrl.harnesses.parsing import as_count, as_dict, as_text, json_lines, outcome
from harnessrl.sandbox.spec import ExecResult

VERSION = "1.64.0"
SEMCONV = "@opentelemetry/semantic-conventions@1.43.0"


def command_code_providers(ctx: HarnessContext, model: str, api: str) -> dict[str, Any]:
    entry = {
        "name": model,
        "contextWindow": context_window(ctx),
        "maxOutput": max_output(ctx),
    }
    provider = {
        "api": api,
        "baseURL": ctx.endpoint.base_url + "/v1",
        "apiKey": f"${KEY_ENV}",
        "models": {model: entry},
    }
    return {"provider": {"harnessrl": provider}}


class CommandCode(HarnessBase):
    name = "command-code"
    package = f"command-code@{VERSION}"
    command = "cmd"
    pinned_node = True
    shell_tool = ShellTool("shell_command", "command")
    modes, choices = option_modes(
        "api",
        {
            "openai-completions": ("openai_chat", 15_928),
            "openai-responses": ("openai_responses", 15_928),
            "anthropic-messages": ("anthropic", 15_926),
        },
    )

    @property
    def npm_specs(self) -> tuple[str, ...]:
        """The CLI and its Node, and the semantic-conventions release it can load (module docstring)."""
        return (*super().npm_specs, SEMCONV)

    def prepare(self, ctx: HarnessContext) -> LaunchSpec:
        model = self.model(ctx)
        providers = command_code_providers(ctx, model, self.choice(ctx, "api"))
        ctx.write_json(".commandcode/providers.json", providers)
        self.write_mcp_settings(ctx, ".commandcode/mcp.json", first={"transport": "stdio"})
        argv = [self.executable(ctx), "-p", ctx.prompt, "--model", f"harnessrl/{model}", "--yolo"]
        argv += ["--output-format", "json", "--local-only"]
        env = {
            "PATH": self.launch_path(ctx),
            KEY_ENV: ctx.endpoint.api_key,
            "COMMAND_CODE_API_KEY": "local-only",
            "CMD_LOCAL_ONLY": "1",
            "COMMANDCODE_SKIP_UPDATES": "1",
            "OTEL_SDK_DISABLED": "true",
            "DO_NOT_TRACK": "1",
        }
        return self.launch_spec(ctx, argv, env)

    def parse(self, res: ExecResult) -> HarnessResult:
        """The last `{"type": "result"}` line: `finalText`, `subtype` (`success` or `error`) and
        `error`; the turn count from the `run_end` event's `turnCount`."""
        result: dict[str, Any] | None = None
        turns = None
        for event in json_lines(res.stdout):
            if event.get("type") == "result":
                result = event
            inner = as_dict(event.get("event"))
            if event.get("type") == "event" and inner.get("type") == "run_end":
                turns = as_count(as_dict(inner.get("result")).get("turnCount"))
        if result is None:
            return outcome(res, done=False)
        final = as_text(result.get("finalText"))
        failed = result.get("subtype") != "success"
        errors = [as_text(result.get("error")) or as_text(result.get("subtype")) or "error"] if failed else []
        return outcome(res, done=True, final=final.strip(), errors=errors, turns=turns)
