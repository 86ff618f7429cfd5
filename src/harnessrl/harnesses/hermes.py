"""Hermes Agent (PyPI `hermes-agent`, NousResearch), headless: `hermes chat -q PROMPT -Q --yolo`.

A Python harness: its pinned venv under `.cache/harnesses/py/` (`install.python_install`), bound
read-only into the sandbox like the npm harnesses. `$HERMES_HOME/config.yaml` (in the sandbox HOME)
names one custom OpenAI-compatible provider at the endpoint (`model.provider: custom`, Chat
Completions); `--yolo` approves every command, `-Q` prints only the final response. Left out: its
gateway, messaging platforms, cron, skills hub, plugins, sessions.
"""

from __future__ import annotations

import json
from pathlib import Path

from harnessrl.harnesses.adapter import HarnessBase, Mode, ShellTool
from harnessrl.harnesses.base import HarnessContext, HarnessResult, LaunchSpec, parse_plain_text
from harnessrl.harnesses.install import python_install
from harnessrl.sandbox.sandbox import SYSTEM_PATH
from harnessrl.sandbox.spec import ExecResult

VERSION = "0.19.0"


class Hermes(HarnessBase):
    name = "hermes"
    version = VERSION
    package = f"hermes-agent=={VERSION}"
    installer = "pypi"
    shell_tool = ShellTool("terminal", "command")
    modes = (Mode("openai_chat", 13_653),)
    default_model = "policy"

    def ensure_installed(self, cache_root: Path | None = None) -> Path:
        return python_install(f"hermes-agent-{VERSION}", [self.package], cache_root)

    def prepare(self, ctx: HarnessContext) -> LaunchSpec:
        model = ctx.endpoint.model or self.default_model
        config = {
            "model": {
                "provider": "custom",
                "default": model,
                "base_url": ctx.endpoint.base_url + "/v1",
                "api_key": ctx.endpoint.api_key,
                "context_length": int(ctx.options.get("context_window", 131072)),
            },
            "security": {"tirith_enabled": False},
        }
        ctx.write_home_file(".hermes/config.yaml", json.dumps(config, indent=1))  # JSON is YAML
        exe = str(ctx.install_dir / "bin" / "hermes")
        argv = [exe, "chat", "-q", ctx.prompt, "-Q", "--yolo"]
        env = {"HERMES_HOME": f"{ctx.home}/.hermes", "PATH": SYSTEM_PATH, "NO_COLOR": "1"}
        return LaunchSpec(argv=argv, env=env, cwd=ctx.workspace)

    def parse(self, res: ExecResult) -> HarnessResult:
        """`-q -Q` prints the final assistant text on stdout and exits non-zero on an error."""
        return parse_plain_text(res)
