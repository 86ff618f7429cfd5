"""The `whitebox:<code>` adapter: installs the stdlib-only agent program and launches it in the sandbox.

    get_harness("whitebox:01220")    # system prompt 0, tools 1, observation 2, context 2, workflow 0

`ensure_installed` copies `agent/` to `<harness cache>/whitebox-<digest of its files>/wbagent` (built
in a temporary sibling and renamed into place, so concurrent installs are safe); `prepare` writes the
run's settings to `$HOME/whitebox/config.json` and runs `python3 -m wbagent` on it in the workspace.
Switches (`options`): `max_steps` (30), `command_timeout_s` (60), `max_tokens` (1024),
`observation_bytes` (2000), `window_turns` (2), `compact_tokens` (3000), `subagents` (false: with
true, a native tool interface also offers `delegate`, which runs a sub-agent with its own system prompt
and context and returns its final answer as the tool result), `subagent_steps` (8).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harnessrl.harnesses.adapter import TEXT_SHELL, HarnessContext, HarnessResult, LaunchSpec, Mode, ShellTool
from harnessrl.harnesses.base import HarnessBase
from harnessrl.harnesses.install import harness_dir
from harnessrl.harnesses.parsing import as_count, as_text, json_lines, outcome
from harnessrl.harnesses.whitebox.agent.agent_loop import levels
from harnessrl.harnesses.whitebox.agent.tools import SHELL_TOOLS
from harnessrl.sandbox.spec import ExecResult
from harnessrl.types import HarnessName

if TYPE_CHECKING:
    from harnessrl.chat.format import ChatFormat
    from harnessrl.protocols import Engine

AGENT_SRC = Path(__file__).parent / "agent"
OPTIONS = (
    "max_steps",
    "command_timeout_s",
    "max_tokens",
    "observation_bytes",
    "window_turns",
    "compact_tokens",
    "subagents",
    "subagent_steps",
)


def agent_digest() -> str:
    h = hashlib.sha256()
    for path in sorted(AGENT_SRC.glob("*.py")):
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:12]


class Whitebox(HarnessBase):
    installer = "local"
    default_model = "whitebox"
    modes = (Mode("openai_chat", None),)  # ~250-900 SmolLM2 tokens, by configuration

    def __init__(self, code: str) -> None:
        tools = levels(code)[1]  # ValueError for a malformed code
        self.code = code
        self.name = HarnessName.whitebox(code)
        self.digest = agent_digest()
        shell = SHELL_TOOLS.get(tools)
        self.shell_tool = TEXT_SHELL if shell is None else ShellTool(*shell)

    @property
    def version(self) -> str:
        """The white-box agent's digest: its code is its package."""
        return self.digest

    def reference_engine(
        self, fmt: ChatFormat, scripts: Sequence[tuple[str, Sequence[str]]], *, max_context: int | None
    ) -> Engine:
        """Full context and the free ReAct loop (`??x00`): the clean turns (turn k answers a prompt with
        k assistant turns); any other configuration: `ReferenceEngine`, which reads each prompt and
        marks its commands `echo ref-step-i;` (windows, compaction, plan and verify calls)."""
        if self.code[3:] == "00":
            return super().reference_engine(fmt, scripts, max_context=max_context)
        from harnessrl.harnesses.whitebox.reference import ReferenceEngine

        return ReferenceEngine(fmt, scripts)

    def install_dir(self, cache_root: Path | None = None) -> Path:
        return harness_dir(cache_root) / f"whitebox-{agent_digest()}"

    def is_installed(self, cache_root: Path | None = None) -> bool:
        return (self.install_dir(cache_root) / "wbagent" / "__main__.py").is_file()

    def ensure_installed(self, cache_root: Path | None = None) -> Path:
        target = self.install_dir(cache_root)
        if self.is_installed(cache_root):
            return target
        tmp = Path(tempfile.mkdtemp(prefix=".whitebox-", dir=target.parent))
        shutil.copytree(AGENT_SRC, tmp / "wbagent", ignore=shutil.ignore_patterns("__pycache__"))
        for path in [tmp, *tmp.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)  # readable by an unprivileged sandbox uid
        try:
            tmp.rename(target)
        except OSError:  # another install won the race: its copy has the same digest
            shutil.rmtree(tmp, ignore_errors=True)
        return target

    def check_options(self, options: Mapping[str, Any]) -> None:
        unknown = set(options) - set(OPTIONS)
        if unknown:
            raise ValueError(f"unknown whitebox options {sorted(unknown)}; known: {', '.join(OPTIONS)}")

    def prepare(self, ctx: HarnessContext) -> LaunchSpec:
        settings = {"code": self.code, "prompt": ctx.prompt, "base_url": ctx.endpoint.base_url}
        settings.update(api_key=ctx.endpoint.api_key, model=self.model(ctx))
        settings.update(ctx.options)
        path = ctx.write_home_file("whitebox/config.json", json.dumps(settings))
        python = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else "python3"
        env = {"PYTHONPATH": str(ctx.install_dir), "PYTHONDONTWRITEBYTECODE": "1"}
        return LaunchSpec(argv=[python, "-m", "wbagent", path], env=env, cwd=ctx.workspace)

    def parse(self, res: ExecResult) -> HarnessResult:
        """The agent's last line with a `code` key: `ok`, `final`, `error`, `turns`."""
        result: dict[str, Any] = {}
        for obj in json_lines(res.stdout):
            if "code" in obj:
                result = obj
        done = result.get("ok") is True
        said = as_text(result.get("error"))
        errors = [said] if said and not (done and res.returncode == 0 and not res.timed_out) else []
        final = as_text(result.get("final", ""))
        return outcome(res, done=done, final=final, errors=errors, turns=as_count(result.get("turns")))
