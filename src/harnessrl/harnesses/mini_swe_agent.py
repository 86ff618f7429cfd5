"""mini-swe-agent (PyPI `mini-swe-agent`), headless: `python -m minisweagent.run.mini -y --exit-immediately`.

The first Python harness: `install.python_install` puts the pinned package in its own venv of
`/usr/bin/python3` under `.cache/harnesses/py/` (bound read-only into the sandbox like the npm
installs). It runs in its text-based mode (`mini_textbased.yaml`, model class `litellm_textbased`):
no native tools; the model acts with exactly one ```mswea_bash_command block per reply, and finishes
by running `echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT` (what follows that line in the output is its
submission). It speaks OpenAI Chat Completions through litellm (`openai/<model>` at `api_base`, not
streamed). Its settings are one config file in the sandbox HOME (JSON, which its YAML loader reads)
merged over the built-in one; env switches skip its first-run setup prompt, its banner, cost
tracking (an unknown model has no price) and litellm's remote price-map fetch.
It prints no result of its own: the launch shell prints the trajectory file it saved after a
marker line, and `parse` reads `info.exit_status` / `info.submission` from it.
Left out: its tool-call mode (`mini.yaml`), the interactive agent, swebench runners; it has no MCP
client, so `mcp_servers` are not started.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harnessrl.harnesses.adapter import HarnessBase, Mode, ShellTool
from harnessrl.harnesses.base import (
    HarnessContext,
    HarnessResult,
    LaunchSpec,
    as_count,
    as_text,
    load_json,
    stderr_tail,
)
from harnessrl.harnesses.install import python_install
from harnessrl.sandbox.sandbox import SYSTEM_PATH
from harnessrl.sandbox.spec import ExecResult
from harnessrl.types import ChatMessage

VERSION = "2.4.6"
SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
MARK = "=== harnessrl: mini-swe-agent trajectory ==="
LAUNCH = f'traj="$1"; shift; "$@"; rc=$?; printf "\\n%s\\n" "{MARK}"; cat "$traj"; exit $rc'
"""`sh -c LAUNCH mswea <trajectory file> <mini command...>`: run mini, then print its trajectory."""


def mini_config(ctx: HarnessContext, model: str) -> dict[str, Any]:
    return {
        "agent": {"step_limit": int(ctx.options.get("max_steps", 50))},
        "model": {
            "model_class": "litellm_textbased",
            "model_name": f"openai/{model}",
            "model_kwargs": {"api_base": ctx.endpoint.base_url + "/v1", "drop_params": True},
            "cost_tracking": "ignore_errors",
        },
        "environment": {"timeout": int(ctx.options.get("command_timeout_s", 60))},
    }


class MiniSweAgent(HarnessBase):
    name = "mini-swe-agent"
    version = VERSION
    package = f"mini-swe-agent=={VERSION}"
    installer = "pypi"
    shell_tool = ShellTool(None, fence="mswea_bash_command")
    modes = (Mode("openai_chat", 840),)
    default_model = "policy"

    def final_turns(self) -> list[ChatMessage | str]:
        """It finishes by running its submit command, not by answering."""
        assert self.shell_tool is not None
        return [self.shell_tool.turn(SUBMIT)]

    def ensure_installed(self, cache_root: Path | None = None) -> Path:
        return python_install(f"{self.name}-{VERSION}", [self.package], cache_root)

    def prepare(self, ctx: HarnessContext) -> LaunchSpec:
        model = ctx.endpoint.model or self.default_model
        cfg = ctx.write_home_file(".mswea/harnessrl.yaml", json.dumps(mini_config(ctx, model)))
        traj = f"{ctx.home}/.mswea/trajectory.json"
        mini = [str(ctx.install_dir / "bin" / "python"), "-m", "minisweagent.run.mini"]
        mini += ["-c", "mini_textbased.yaml", "-c", cfg, "--agent-class", "default"]
        mini += ["-y", "--exit-immediately", "-o", traj, "-t", ctx.prompt]
        env = {
            "PATH": SYSTEM_PATH,  # not its venv's bin: the agent's commands keep the sandbox's python
            "OPENAI_API_KEY": ctx.endpoint.api_key,
            "MSWEA_CONFIGURED": "1",
            "MSWEA_SILENT_STARTUP": "1",
            "MSWEA_GLOBAL_CONFIG_DIR": f"{ctx.home}/.mswea",
            "MSWEA_COST_TRACKING": "ignore_errors",
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "PYTHONDONTWRITEBYTECODE": "1",
            "NO_COLOR": "1",
        }
        return LaunchSpec(argv=["/bin/sh", "-c", LAUNCH, "mswea", traj, *mini], env=env, cwd=ctx.workspace)

    def parse(self, res: ExecResult) -> HarnessResult:
        """The trajectory after the last marker: `info.exit_status` "Submitted" is success; the final
        message is the submission, else the last assistant text."""
        _, found, tail = res.stdout.rpartition(MARK)
        info: dict[str, Any] = {}
        messages: list[Any] = []
        data = load_json(tail) if found else None  # HarnessError for JSON past the parser (too deep)
        if isinstance(data, dict) and isinstance(data.get("info"), dict):
            info = data["info"]
        if isinstance(data, dict) and isinstance(data.get("messages"), list):
            messages = data["messages"]
        status = as_text(info.get("exit_status"))
        ok = res.returncode == 0 and status == "Submitted" and not res.timed_out
        said = [
            as_text(m.get("content"))
            for m in messages
            if isinstance(m, dict) and m.get("role") == "assistant"
        ]
        final = as_text(info.get("submission")).strip() or next((s for s in reversed(said) if s), "")
        stats = info.get("model_stats")
        calls = as_count(stats.get("api_calls")) if isinstance(stats, dict) else None
        error = "" if ok else (f"exit status {status}" if status else stderr_tail(res))
        return HarnessResult(
            ok=ok,
            exit_code=res.returncode,
            final_message=final,
            timed_out=res.timed_out,
            error=error,
            turns=calls,
        )
