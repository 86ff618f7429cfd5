"""mini-swe-agent (PyPI `mini-swe-agent`), headless: `python -m minisweagent.run.mini -y --exit-immediately`.

The first Python harness: `install.python_install` puts its locked wheels in a venv of
`/usr/bin/python3` (bound read-only into the sandbox like the npm installs). It runs in its
text-based mode (`mini_textbased.yaml`, model class `litellm_textbased`): no native tools; the model
acts with exactly one ```mswea_bash_command block per reply, and finishes by running `echo
COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT` (what follows that line in the output is its submission). It
speaks OpenAI Chat Completions through litellm (`openai/<model>` at `api_base`, not streamed). Its
settings are one config file in the sandbox HOME (JSON, which its YAML loader reads) merged over the
built-in one; env switches skip its first-run setup prompt, its banner, cost tracking (an unknown
model has no price) and litellm's remote price-map fetch. It prints no result of its own: the launch
shell prints the trajectory file it saved after a marker line, and `parse` reads `info.exit_status`
/ `info.submission` from it. Left out: its tool-call mode (`mini.yaml`), the interactive agent,
swebench runners; it has no MCP client, so `mcp_servers` are not started.
"""

from __future__ import annotations

import json
from typing import Any

from harnessrl.harnesses.adapter import HarnessContext, HarnessResult, LaunchSpec, Mode, ShellTool
from harnessrl.harnesses.base import HarnessBase
from harnessrl.harnesses.parsing import as_count, as_dict, as_text, load_json, outcome
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
    package = f"mini-swe-agent=={VERSION}"
    installer = "pypi"
    command = "python"
    shell_tool = ShellTool(None, fence="mswea_bash_command")
    modes = (Mode("openai_chat", 840),)

    def final_turns(self) -> list[ChatMessage | str]:
        """It finishes by running its submit command, not by answering."""
        assert self.shell_tool is not None
        return [self.shell_tool.turn(SUBMIT)]

    def prepare(self, ctx: HarnessContext) -> LaunchSpec:
        cfg = ctx.write_home_file(".mswea/harnessrl.yaml", json.dumps(mini_config(ctx, self.model(ctx))))
        traj = f"{ctx.home}/.mswea/trajectory.json"
        mini = [self.executable(ctx), "-m", "minisweagent.run.mini", "-c", "mini_textbased.yaml", "-c", cfg]
        mini += ["--agent-class", "default", "-y", "--exit-immediately", "-o", traj, "-t", ctx.prompt]
        env = {
            "PATH": self.launch_path(
                ctx
            ),  # not its venv's bin: the agent's commands keep the sandbox's python
            "OPENAI_API_KEY": ctx.endpoint.api_key,
            "MSWEA_CONFIGURED": "1",
            "MSWEA_SILENT_STARTUP": "1",
            "MSWEA_GLOBAL_CONFIG_DIR": f"{ctx.home}/.mswea",
            "MSWEA_COST_TRACKING": "ignore_errors",
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "PYTHONDONTWRITEBYTECODE": "1",
        }
        return self.launch_spec(ctx, ["/bin/sh", "-c", LAUNCH, "mswea", traj, *mini], env)

    def parse(self, res: ExecResult) -> HarnessResult:
        """The trajectory after the last marker: `info.exit_status` "Submitted" is success; the final
        message is the submission, else the last assistant text."""
        _, found, tail = res.stdout.rpartition(MARK)
        data = as_dict(load_json(tail) if found else None)  # HarnessError for JSON past the parser
        info = as_dict(data.get("info"))
        messages = data["messages"] if isinstance(data.get("messages"), list) else []
        status = as_text(info.get("exit_status"))
        said = [as_text(as_dict(m).get("content")) for m in messages if as_dict(m).get("role") == "assistant"]
        final = as_text(info.get("submission")).strip() or next((s for s in reversed(said) if s), "")
        calls = as_count(as_dict(info.get("model_stats")).get("api_calls"))
        submitted = status == "Submitted" and res.returncode == 0 and not res.timed_out
        errors = [f"exit status {status}"] if status and not submitted else []
        return outcome(res, done=submitted, final=final, errors=errors, turns=calls)
