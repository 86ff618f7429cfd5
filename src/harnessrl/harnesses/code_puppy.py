"""Code Puppy (PyPI `code-puppy`), headless: `code-puppy -p PROMPT -m <model>`.

A Python harness (a venv of its locked wheels, `install.python_install`). Its files live in
`~/.code_puppy`: `puppy.cfg` (INI, section `[puppy]`) names the puppy and its owner (else its
first run asks on stdin) and the model, `extra_models.json` declares that model as a
`custom_openai` endpoint (OpenAI Chat Completions through pydantic-ai) with the session token as
its key; `mcp_servers.json` lists the MCP servers and `mcp_agent_bindings.json` binds them to its
agent with `auto_start` (its agent sees only bound servers). Yolo mode (its default) runs shell
commands without asking; `--disable-ask-user-question` drops the tool that would wait on stdin;
`NO_VERSION_UPDATE` skips its PyPI version check. Its system prompt holds a random id
(`code-puppy-<6 hex>`, from a uuid4), so no two runs send the same first prompt. Left out: its
other agents, the browser tools, OAuth providers.
"""

from __future__ import annotations

import re

from harnessrl.harnesses.adapter import HarnessContext, HarnessResult, LaunchSpec, Mode, ShellTool
from harnessrl.harnesses.base import HarnessBase, context_window, mcp_servers_json
from harnessrl.harnesses.parsing import as_count, as_dict, load_json, outcome
from harnessrl.sandbox.spec import ExecResult

VERSION = "0.0.946"
MARK = "=== harnessrl: code-puppy usage ==="
LAUNCH = f'usage="$1"; shift; "$@"; rc=$?; printf "\\n%s\\n" "{MARK}"; cat "$usage"; exit $rc'
"""`sh -c LAUNCH puppy <usage file> <code-puppy command...>`: run it, then print its usage file (written
only when the run ended with an answer: its errors are printed, and it exits 0 all the same)."""
ESCAPES = re.compile(r"\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b\[[0-9;?]*[A-Za-z]")
"""Terminal escapes it prints whatever NO_COLOR says (OSC palette sets and resets, CSI)."""


class CodePuppy(HarnessBase):
    name = "code-puppy"
    package = f"code-puppy=={VERSION}"
    installer = "pypi"
    shell_tool = ShellTool("shell", "command", extra={"cwd": None, "timeout": 60, "background": False})
    """Its history re-sends a call with every argument filled in: the reference sends them so."""
    modes = (Mode("openai_chat", 3977),)

    def prepare(self, ctx: HarnessContext) -> LaunchSpec:
        model = self.model(ctx)
        endpoint = {"url": ctx.endpoint.base_url + "/v1", "api_key": "$OPENAI_API_KEY"}
        spec = {"type": "custom_openai", "name": model, "custom_endpoint": endpoint}
        ctx.write_json(
            ".code_puppy/extra_models.json", {model: {**spec, "context_length": context_window(ctx)}}
        )
        cfg = "[puppy]\npuppy_name = puppy\nowner_name = harnessrl\n"
        cfg += f"model = {model}\nyolo_mode = true\nauto_save_session = false\n"
        ctx.write_home_file(".code_puppy/puppy.cfg", cfg)
        if ctx.mcp_servers:
            servers = mcp_servers_json(ctx.mcp_servers, first={"type": "stdio"})
            ctx.write_json(".code_puppy/mcp_servers.json", {"mcp_servers": servers})
            bound = {name: {"auto_start": True} for name in servers}  # its agent sees only bound ones
            ctx.write_json(".code_puppy/mcp_agent_bindings.json", {"bindings": {"code-puppy": bound}})
        usage = f"{ctx.home}/.code_puppy/usage.json"
        puppy = [self.executable(ctx), "--disable-ask-user-question", "--usage-file", usage]
        argv = ["/bin/sh", "-c", LAUNCH, "puppy", usage, *puppy, "-m", model, "-p", ctx.prompt]
        env = {
            "PATH": self.launch_path(ctx),
            "OPENAI_API_KEY": ctx.endpoint.api_key,
            "NO_VERSION_UPDATE": "1",
            "PYTHONDONTWRITEBYTECODE": "1",
        }
        return self.launch_spec(ctx, argv, env)

    def parse(self, res: ExecResult) -> HarnessResult:
        """Done when the usage file follows the last marker (its `requests` are the turns); the final
        message is the last paragraph printed before it, escapes removed."""
        head, found, tail = res.stdout.rpartition(MARK)
        usage = as_dict(load_json(tail)) if found else {}
        text = ESCAPES.sub("", head if found else res.stdout)
        paragraphs = [p.strip() for p in re.split(r"\n\s*\n", text) if p.strip()]
        final = paragraphs[-1] if usage and paragraphs else ""
        return outcome(res, done=bool(usage), final=final, turns=as_count(usage.get("requests")))
