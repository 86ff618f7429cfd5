"""The trivial `shell` harness: runs one shell command in the workspace, calls no model by itself.

Used by the sandbox benchmark and the fault tests (crash = `exit 3`, hang = `sleep 1000`). The
command comes from `options["command"]`; it sees the endpoint as `$HARNESSRL_BASE_URL` and
`$HARNESSRL_API_KEY`, so a script can still make model calls. The final message is the last line of
stdout. Nothing to install: it uses the sandbox's /bin/sh.
"""

from __future__ import annotations

from pathlib import Path

from harnessrl.harnesses.adapter import HarnessBase
from harnessrl.harnesses.base import HarnessContext, HarnessResult, LaunchSpec, clean_text, stderr_tail
from harnessrl.sandbox.spec import ExecResult


class Shell(HarnessBase):
    """No model-driven shell: the reference engine answers any call it makes with "done"."""

    name = "shell"
    installer = "none"

    def ensure_installed(self, cache_root: Path | None = None) -> Path:
        return Path("/usr")

    def prepare(self, ctx: HarnessContext) -> LaunchSpec:
        command = ctx.options.get("command")
        if not isinstance(command, str) or not command:
            raise ValueError("the shell harness needs options['command'] (a shell command line)")
        env = {"HARNESSRL_BASE_URL": ctx.endpoint.base_url, "HARNESSRL_API_KEY": ctx.endpoint.api_key}
        env["HARNESSRL_PROMPT"] = ctx.prompt
        return LaunchSpec(argv=["/bin/sh", "-c", command], env=env, cwd=ctx.workspace)

    def parse(self, res: ExecResult) -> HarnessResult:
        lines = res.stdout.strip().splitlines()
        ok = res.returncode == 0 and not res.timed_out
        return HarnessResult(
            ok=ok,
            exit_code=res.returncode,
            final_message=clean_text(lines[-1]) if lines else "",
            timed_out=res.timed_out,
            error="" if ok else stderr_tail(res),
        )
