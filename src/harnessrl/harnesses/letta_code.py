"""Letta Code (`@letta-ai/letta-code`, command `letta`), headless on its local backend:
`letta --backend local -p PROMPT --output-format stream-json --yolo --model PROVIDER/MODEL`.

`--backend local` runs Letta's stateful agent inside the CLI (agents, conversations and memory under
`$HOME/.letta`), with no Letta server, cloud or login. Its model providers are pi-ai's, picked by
option `provider` (`PROVIDERS`): `llama-cpp` (default), a plain OpenAI-compatible endpoint (Chat
Completions, streamed) set from the environment alone (`LLAMA_CPP_BASE_URL`, the endpoint's `/v1`,
and `LLAMA_CPP_API_KEY`), any model name, and one `GET /v1/models` that may fail; `google-ai` (the
Gemini API, `GOOGLE_GENERATIVE_AI_BASE_URL`); `anthropic` (Messages), whose base URL can only be a
stored connection (`STORE`, as `letta connect anthropic --base-url` writes it, key included). The
catalog providers ask for a model they know (`gemini-2.5-pro`, `claude-sonnet-4-6`). Its `openai`
provider (Responses) is left out: for OpenAI models Letta swaps in its Codex tool set
(`ShellCommand`, `ApplyPatch`; `--toolset default` does not change that headless), which the
adapter's one shell tool cannot follow. Memory as a git repository (memfs, which needs git) is off
(`LETTA_LOCAL_BACKEND_NO_MEMFS`), as are telemetry (`LETTA_CODE_TELEM=0`) and auto-update
(`DISABLE_AUTOUPDATER=1`); `--yolo` runs its tools without asking. `stream-json` ends in a
Claude-Code-shaped `{"type": "result"}` line.

Pinned to 0.25.9, not the newest 0.32.18: every release from 0.30.28 on depends on
`@letta-ai/trajectory@0.2.0`, and 0.31 on also on `@janhapke/sharp-electron@0.35.3-electron.1`,
neither of which the npm registry serves, so npm cannot lock them. It needs Node >= 22.19: the
pinned Node is locked beside it. Left out: Letta Cloud (Constellation) agents, memfs, channels,
schedules, skills beyond the bundled ones, MCP servers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harnessrl.harnesses.adapter import HarnessContext, HarnessResult, LaunchSpec, ShellTool
from harnessrl.harnesses.base import HarnessBase, option_modes
from harnessrl.harnesses.parsing import json_lines, parse_result_event
from harnessrl.sandbox.spec import ExecResult
from harnessrl.types import DialectName

VERSION = "0.25.9"
STORE = ".letta/lc-local-backend/providers/auth.json"
"""The local backend's provider connections (what `letta --backend local connect` writes)."""


@dataclass(frozen=True)
class Provider:
    """One of its pi-ai providers: the model handle's prefix, the model it asks for (None: the
    endpoint's; catalog providers take only models they know, and the proxy serves whatever policy
    it holds), what follows the API root in its base URL, the dialect it speaks and its first
    prompt's size (its `Mode`), and how the endpoint reaches it: environment variables, or (`store`)
    a connection in STORE under that name."""

    prefix: str
    model: str | None
    suffix: str
    dialect: DialectName
    first_prompt: int
    url_env: str = ""
    key_env: str = ""
    store: str = ""


PROVIDERS = {
    "llama-cpp": Provider(
        "llama-cpp", None, "/v1", "openai_chat", 15_090, "LLAMA_CPP_BASE_URL", "LLAMA_CPP_API_KEY"
    ),
    "anthropic": Provider("anthropic", "claude-sonnet-4-6", "", "anthropic", 14_823, store="lc-anthropic"),
    "google-ai": Provider(
        "google_ai",
        "gemini-2.5-pro",
        "/v1beta",
        "gemini",
        15_090,
        "GOOGLE_GENERATIVE_AI_BASE_URL",
        "GEMINI_API_KEY",
    ),
}


def store_connection(ctx: HarnessContext, name: str, provider_type: str, base_url: str) -> dict[str, Any]:
    """STORE holding one connection, as `connect --base-url` writes it (its key is kept there raw)."""
    record = {
        "id": f"local-provider-{name}",
        "name": name,
        "provider_type": provider_type,
        "provider_category": "byok",
        "auth": {"type": "api", "key": ctx.endpoint.api_key},
        "base_url": base_url,
    }
    return {"version": 1, "providers": {name: record}}


class LettaCode(HarnessBase):
    name = "letta-code"
    package = f"@letta-ai/letta-code@{VERSION}"
    command = "letta"
    pinned_node = True
    shell_tool = ShellTool("Bash", "command")
    modes, choices = option_modes("provider", {n: (p.dialect, p.first_prompt) for n, p in PROVIDERS.items()})

    def prepare(self, ctx: HarnessContext) -> LaunchSpec:
        name = self.choice(ctx, "provider")
        p = PROVIDERS[name]
        base_url = ctx.endpoint.base_url + p.suffix
        env = {"PATH": self.launch_path(ctx)}
        if p.store:
            ctx.write_json(STORE, store_connection(ctx, p.store, name, base_url))
        else:
            env |= {p.url_env: base_url, p.key_env: ctx.endpoint.api_key}
        env |= {"LETTA_LOCAL_BACKEND_NO_MEMFS": "1", "LETTA_CODE_TELEM": "0", "DISABLE_AUTOUPDATER": "1"}
        argv = [
            self.executable(ctx),
            "--backend",
            "local",
            "-p",
            ctx.prompt,
            "--output-format",
            "stream-json",
        ]
        argv += ["--yolo", "--model", f"{p.prefix}/{p.model or self.model(ctx)}"]
        return self.launch_spec(ctx, argv, env)

    def parse(self, res: ExecResult) -> HarnessResult:
        """The `{"type": "result"}` line (Claude Code's shape). Its `num_turns` is 0 on the local
        backend however many calls it made, so the turns are its `usage_statistics` messages (one
        per model call) when it reports none."""
        parsed = parse_result_event(res)
        if parsed.turns:
            return parsed
        calls = sum(1 for e in json_lines(res.stdout) if e.get("message_type") == "usage_statistics")
        return parsed.model_copy(update={"turns": calls or None})
