"""gptme (PyPI `gptme`), headless: `gptme -n --name harnessrl --output-format json -m local/<model> -- P`.

A Python harness (a venv of its locked wheels, `install.python_install`). Its `local` provider is
an OpenAI-compatible endpoint named by `OPENAI_BASE_URL` (Chat Completions, streamed); the model is
`local/<name>`. `--tool-format tool` gives native tool calls; `TOOL_ALLOWLIST` keeps `shell`; the
non-interactive mode (`-n`: no confirmations) adds `complete`, the tool it must call to finish (an
answer without a tool call is nudged to call it; after two such it exits). The conversation's config
(`<logs>/harnessrl/config.toml`) names it, so it makes no side call to the model for a name, and
keeps the workspace as its working directory. `GPTME_TIKTOKEN_TIMEOUT=0`: no tokenizer download
(it counts ~4 characters a token). `--output-format json` prints each message as a JSON line.
Left out: its other tools, the server, agents and lessons, and MCP servers: its allowlist takes
an MCP server's tools only as `<server>.*`, and each entry must match a tool
(`gptme/tools/__init__.py` `get_toolchain`, strict), so a server without tools, or one that fails
to start, would stop the run (without an allowlist it offers 12 tools and no MCP ones).
"""

from __future__ import annotations

from harnessrl.harnesses.adapter import HarnessContext, HarnessResult, LaunchSpec, Mode, ShellTool
from harnessrl.harnesses.base import HarnessBase, toml_document
from harnessrl.harnesses.parsing import as_text, json_lines, outcome
from harnessrl.sandbox.spec import ExecResult
from harnessrl.types import ChatMessage, ToolCall

VERSION = "0.35.1"
CONVERSATION = "harnessrl"


def chat_config(ctx: HarnessContext) -> str:
    """The conversation's config.toml: its name, so no side call to the model names it, and the
    workspace."""
    return toml_document(("[chat]", {"name": CONVERSATION, "workspace": ctx.workspace}))


class Gptme(HarnessBase):
    name = "gptme"
    package = f"gptme=={VERSION}"
    installer = "pypi"
    shell_tool = ShellTool("shell", "command")
    modes = (Mode("openai_chat", 2231),)

    def final_turns(self) -> list[ChatMessage | str]:
        """It finishes by calling its `complete` tool (an answer without a tool call is nudged to)."""
        return [ChatMessage(role="assistant", content=self.finish, tool_calls=[ToolCall(name="complete")])]

    def prepare(self, ctx: HarnessContext) -> LaunchSpec:
        ctx.write_home_file(f".gptme/logs/{CONVERSATION}/config.toml", chat_config(ctx))
        argv = [self.executable(ctx), "-n", "--name", CONVERSATION, "--output-format", "json"]
        argv += ["--tool-format", "tool"]
        argv += ["-m", f"local/{self.model(ctx)}", "--", ctx.prompt]
        env = {
            "PATH": self.launch_path(ctx),
            "OPENAI_BASE_URL": ctx.endpoint.base_url + "/v1",
            "OPENAI_API_KEY": ctx.endpoint.api_key,
            "GPTME_LOGS_HOME": f"{ctx.home}/.gptme/logs",
            "TOOL_ALLOWLIST": "shell",
            "GPTME_TIKTOKEN_TIMEOUT": "0",  # no encoding download: it counts ~4 characters a token
            "PYTHONDONTWRITEBYTECODE": "1",
        }
        return self.launch_spec(ctx, argv, env)

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
