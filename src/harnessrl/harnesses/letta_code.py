"""Letta Code (`@letta-ai/letta-code`, command `letta`), headless on its local backend:
`letta --backend local -p PROMPT --output-format stream-json --yolo --model llama-cpp/MODEL`.

`--backend local` runs Letta's stateful agent inside the CLI (agents, conversations and memory under
`$HOME/.letta`), with no Letta server, cloud or login. Its model providers are pi-ai's; the
`llama-cpp` one is a plain OpenAI-compatible endpoint (Chat Completions, streamed) configured from
the environment alone: `LLAMA_CPP_BASE_URL` (the endpoint's `/v1`) and `LLAMA_CPP_API_KEY`, with
any model name (`llama-cpp/MODEL`); it lists `GET /v1/models` once and goes on when that fails.
Memory-as-git-repository (memfs, which needs git) is off (`LETTA_LOCAL_BACKEND_NO_MEMFS`), as are
telemetry (`LETTA_CODE_TELEM=0`) and auto-update (`DISABLE_AUTOUPDATER=1`); `--yolo` runs its
tools without asking. `stream-json` ends in a Claude-Code-shaped `{"type": "result"}` line.

Pinned to 0.25.9, not the newest 0.32.18: every release from 0.30.28 on depends on
`@letta-ai/trajectory@0.2.0`, and 0.31 on also on `@janhapke/sharp-electron@0.35.3-electron.1`,
neither of which the npm registry serves, so npm cannot lock them. It needs Node >= 22.19: the
pinned Node is locked beside it. Left out: Letta Cloud (Constellation) agents, memfs, channels,
schedules, skills beyond the bundled ones, MCP servers.
"""

from __future__ import annotations

from harnessrl.harnesses.adapter import HarnessContext, HarnessResult, LaunchSpec, Mode, ShellTool
from harnessrl.harnesses.base import HarnessBase
from harnessrl.harnesses.parsing import json_lines, parse_result_event
from harnessrl.sandbox.spec import ExecResult

VERSION = "0.25.9"


class LettaCode(HarnessBase):
    name = "letta-code"
    version = VERSION
    package = f"@letta-ai/letta-code@{VERSION}"
    command = "letta"
    pinned_node = True
    shell_tool = ShellTool("Bash", "command")
    modes = (Mode("openai_chat", 15_087),)

    def prepare(self, ctx: HarnessContext) -> LaunchSpec:
        argv = [
            self.executable(ctx),
            "--backend",
            "local",
            "-p",
            ctx.prompt,
            "--output-format",
            "stream-json",
        ]
        argv += ["--yolo", "--model", f"llama-cpp/{self.model(ctx)}"]
        env = {
            "PATH": self.launch_path(ctx),
            "LLAMA_CPP_BASE_URL": ctx.endpoint.base_url + "/v1",
            "LLAMA_CPP_API_KEY": ctx.endpoint.api_key,
            "LETTA_LOCAL_BACKEND_NO_MEMFS": "1",
            "LETTA_CODE_TELEM": "0",
            "DISABLE_AUTOUPDATER": "1",
            "NO_COLOR": "1",
        }
        return LaunchSpec(argv=argv, env=env, cwd=ctx.workspace)

    def parse(self, res: ExecResult) -> HarnessResult:
        """The `{"type": "result"}` line (Claude Code's shape). Its `num_turns` is 0 on the local
        backend however many calls it made, so the turns are its `usage_statistics` messages (one
        per model call) when it reports none."""
        parsed = parse_result_event(res)
        if parsed.turns:
            return parsed
        calls = sum(1 for e in json_lines(res.stdout) if e.get("message_type") == "usage_statistics")
        return parsed.model_copy(update={"turns": calls or None})
