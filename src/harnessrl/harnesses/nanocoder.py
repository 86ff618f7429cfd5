"""Nanocoder (`@nanocollective/nanocoder`), headless: `nanocoder --plain --json --mode yolo
--trust-directory --provider harnessrl --model MODEL run PROMPT`.

It reads its providers from `agents.config.json` in `$NANOCODER_CONFIG_DIR` (`~/.config/nanocoder`);
ours is one, `harnessrl`, through the AI SDK's OpenAI-compatible provider (Chat Completions,
streamed) at the endpoint, with one model and its context window (so it never asks models.dev).
`--plain` is its Ink-free runtime, `--mode yolo` runs every tool without asking, `--trust-directory`
skips the first-run trust prompt, and `--json` prints one JSON report at the end (`kind`,
`finalText`, `toolCalls`, `message` on an error). Its update check runs only in the TUI; log files
are off. It needs Node >= 22: the pinned Node of `install.NODE_PACKAGE` is locked beside it and put
first on PATH. MCP servers go to `.mcp.json` beside the config. Left out: the TUI, sessions, the
VS Code and ACP modes, the daemon, the Copilot and Codex logins, subagents of its own.
"""

from __future__ import annotations

from typing import Any

from harnessrl.harnesses.adapter import HarnessContext, HarnessResult, LaunchSpec, Mode, ShellTool
from harnessrl.harnesses.base import HarnessBase, context_window
from harnessrl.harnesses.parsing import as_dict, as_text, load_json, outcome
from harnessrl.sandbox.spec import ExecResult

VERSION = "1.30.0"
CONFIG_DIR = ".config/nanocoder"
PROVIDER = "harnessrl"


def nanocoder_config(ctx: HarnessContext, model: str) -> dict[str, Any]:
    provider = {
        "name": PROVIDER,
        "sdkProvider": "openai-compatible",
        "baseUrl": ctx.endpoint.base_url + "/v1",
        "apiKey": ctx.endpoint.api_key,
        "models": [model],
        "contextWindow": context_window(ctx),
    }
    return {"nanocoder": {"providers": [provider]}}


def json_report(stdout: str) -> dict[str, Any]:
    """The one JSON object `--json` prints (indented, at the end of stdout); empty when there is none."""
    start = stdout.rfind("\n{\n") + 1  # its opening brace on a line of its own; 0 when first
    return as_dict(load_json(stdout[start:].strip()))


class Nanocoder(HarnessBase):
    name = "nanocoder"
    package = f"@nanocollective/nanocoder@{VERSION}"
    pinned_node = True
    shell_tool = ShellTool("execute_bash", "command")
    modes = (Mode("openai_chat", 5_807),)

    def prepare(self, ctx: HarnessContext) -> LaunchSpec:
        model = self.model(ctx)
        ctx.write_json(f"{CONFIG_DIR}/agents.config.json", nanocoder_config(ctx, model))
        self.write_mcp_settings(ctx, f"{CONFIG_DIR}/.mcp.json")
        argv = [self.executable(ctx), "--plain", "--json", "--mode", "yolo", "--trust-directory"]
        argv += ["--provider", PROVIDER, "--model", model, "run", ctx.prompt]
        env = {
            "PATH": self.launch_path(ctx),
            "NANOCODER_CONFIG_DIR": f"{ctx.home}/{CONFIG_DIR}",
            "NANOCODER_DATA_DIR": f"{ctx.home}/.local/share/nanocoder",
            "NANOCODER_LOG_DISABLE_FILE": "1",
        }
        return self.launch_spec(ctx, argv, env)

    def parse(self, res: ExecResult) -> HarnessResult:
        """The `--json` report: `kind` `success` with its `finalText`; `error` (its `message`) or
        `tool-approval-required` is the harness's error."""
        report = json_report(res.stdout)
        kind = as_text(report.get("kind"))
        errors = [] if kind in ("success", "") else [f"{kind}: {as_text(report.get('message'))}".strip(": ")]
        return outcome(res, done=bool(kind), final=as_text(report.get("finalText")).strip(), errors=errors)
