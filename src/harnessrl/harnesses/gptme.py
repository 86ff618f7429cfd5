"""gptme (PyPI `gptme`), headless: `gptme -n --output-format json -m local/<model> -t shell -- PROMPT`.

A Python harness (a venv of its locked wheels, `install.python_install`). Its `local` provider is
an OpenAI-compatible endpoint named by `OPENAI_BASE_URL` (Chat Completions, streamed); the model is
`local/<name>`. `--tool-format tool` gives native tool calls, `-t shell` keeps one tool (the
non-interactive mode adds `complete`), `-n` runs without confirmations and exits when the model
answers without a tool call; `--output-format json` prints each message as a JSON line.
Left out: its other tools, MCP, the server, agents and lessons.
"""

from __future__ import annotations

import json

from harnessrl.harnesses.adapter import HarnessContext, HarnessResult, LaunchSpec, Mode, ShellTool
from harnessrl.harnesses.base import HarnessBase
from harnessrl.harnesses.parsing import as_text, json_lines, outcome
from harnessrl.sandbox.spec import ExecResult
from harnessrl.types import ChatMessage, ToolCall

VERSION = "0.35.1"
CONVERSATION = "harnessrl"


class Gptme(HarnessBase):
    name = "gptme"
    version = VERSION
    package = f"gptme=={VERSION}"
    installer = "pypi"
    command = "gptme"
    shell_tool = ShellTool("shell", "command")
    modes = (Mode("openai_chat", 2231),)

    def final_turns(self) -> list[ChatMessage | str]:
        """It finishes by calling its `complete` tool (an answer without a tool call is nudged to)."""
        return [ChatMessage(role="assistant", content=self.finish, tool_calls=[ToolCall(name="complete")])]

    def prepare(self, ctx: HarnessContext) -> LaunchSpec:
        # a conversation whose config already has a name: no side call to the model to name it
        chat = f"[chat]\nname = {json.dumps(CONVERSATION)}\nworkspace = {json.dumps(ctx.workspace)}\n"
        ctx.write_home_file(f".gptme/logs/{CONVERSATION}/config.toml", chat)  # TOML: JSON strings
        argv = [
            self.executable(ctx),
            "-n",
            "--name",
            CONVERSATION,
            "--output-format",
            "json",
            "--tool-format",
            "tool",
        ]
        argv += ["-t", "shell", "-m", f"local/{self.model(ctx)}", "--", ctx.prompt]
        env = {
            "PATH": self.launch_path(ctx),
            "OPENAI_BASE_URL": ctx.endpoint.base_url + "/v1",
            "OPENAI_API_KEY": ctx.endpoint.api_key,
            "GPTME_LOGS_HOME": f"{ctx.home}/.gptme/logs",
            "GPTME_TIKTOKEN_TIMEOUT": "0",  # no encoding download: it counts ~4 characters a token
            "PYTHONDONTWRITEBYTECODE": "1",
            "NO_COLOR": "1",
        }
        return LaunchSpec(argv=argv, env=env, cwd=ctx.workspace)

    def parse(self, res: ExecResult) -> HarnessResult:
        """Each message a JSON line: the final message is the last assistant one's text before its tool
        calls (`@tool(id): {...}` lines); it exits non-zero on an error."""
        said = [as_text(e.get("content")) for e in json_lines(res.stdout) if e.get("role") == "assistant"]
        return outcome(
            res,
            done=bool(said),
            final=said[-1].partition("\n@")[0].strip() if said else "",
            turns=len(said) or None,
        )
