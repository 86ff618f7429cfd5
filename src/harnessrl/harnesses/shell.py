"""The trivial `shell` harness: runs one shell command in the workspace, calls no model by itself.

Used by the sandbox benchmark and the fault tests (crash = `exit 3`, hang = `sleep 1000`). The
command comes from `options["command"]`; it sees the endpoint as `$HARNESSRL_BASE_URL` and
`$HARNESSRL_API_KEY`, so a script can still make model calls. The final message is the last line of
stdout. Nothing to install: it uses the sandbox's /bin/sh.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harnessrl.harnesses.adapter import HarnessContext, HarnessResult, LaunchSpec
from harnessrl.harnesses.base import HarnessBase
from harnessrl.harnesses.parsing import outcome
from harnessrl.sandbox.spec import ExecResult


class Shell(HarnessBase):
    """No model-driven shell: the reference engine answers any call it makes with "done"."""

    name = "shell"
    installer = "none"

    def check_options(self, options: Mapping[str, Any]) -> None:
        command = options.get("command")
        if not isinstance(command, str) or not command:
            raise ValueError("the shell harness needs options['command'] (a shell command line)")

    def prepare(self, ctx: HarnessContext) -> LaunchSpec:
        env = {"HARNESSRL_BASE_URL": ctx.endpoint.base_url, "HARNESSRL_API_KEY": ctx.endpoint.api_key}
        env["HARNESSRL_PROMPT"] = ctx.prompt
        return LaunchSpec(argv=["/bin/sh", "-c", ctx.options["command"]], env=env, cwd=ctx.workspace)

    def parse(self, res: ExecResult) -> HarnessResult:
        lines = res.stdout.strip().splitlines()
        return outcome(res, done=True, final=lines[-1] if lines else "")
