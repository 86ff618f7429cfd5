"""Hermes Agent (PyPI `hermes-agent`, NousResearch), headless: `hermes chat -q PROMPT -Q --yolo`.

A Python harness: a venv of its locked wheels (`install.python_install`), bound read-only into the
sandbox like the npm harnesses. `$HERMES_HOME/config.yaml` (in the sandbox HOME)
names one custom OpenAI-compatible provider at the endpoint (`model.provider: custom`, Chat
Completions); `--yolo` approves every command, `-Q` prints only the final response. Left out: its
gateway, messaging platforms, cron, skills hub, plugins, sessions.
"""

from __future__ import annotations

from harnessrl.harnesses.adapter import HarnessContext, LaunchSpec, Mode, ShellTool
from harnessrl.harnesses.base import HarnessBase, context_window
from harnessrl.harnesses.parsing import parse_plain_text

VERSION = "0.19.0"


class Hermes(HarnessBase):
    name = "hermes"
    package = f"hermes-agent=={VERSION}"
    installer = "pypi"
    shell_tool = ShellTool("terminal", "command")
    modes = (Mode("openai_chat", 13_653),)

    def prepare(self, ctx: HarnessContext) -> LaunchSpec:
        model = {
            "provider": "custom",
            "default": self.model(ctx),
            "base_url": ctx.endpoint.base_url + "/v1",
            "api_key": ctx.endpoint.api_key,
            "context_length": context_window(ctx),
        }
        ctx.write_json(".hermes/config.yaml", {"model": model, "security": {"tirith_enabled": False}})
        argv = [self.executable(ctx), "chat", "-q", ctx.prompt, "-Q", "--yolo"]
        env = {"HERMES_HOME": f"{ctx.home}/.hermes", "PATH": self.launch_path(ctx)}
        return self.launch_spec(ctx, argv, env)

    parse = staticmethod(parse_plain_text)
    """`-q -Q` prints the final assistant text on stdout and exits non-zero on an error."""
