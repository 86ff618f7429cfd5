"""Codex CLI (`@openai/codex`), headless: `codex exec --json PROMPT`.

It speaks OpenAI Responses (`POST {base_url}/responses`, streamed); this version rejects
`wire_api = "chat"`. Everything is set in `$CODEX_HOME/config.toml`: a model provider pointing at the
endpoint with its key read from an env var, approvals and Codex's own sandbox off (we are the sandbox),
update checks and analytics off. TMPDIR stays the sandbox's /tmp, outside CODEX_HOME (Codex refuses a
temp folder inside its home). Left out: profiles, `codex login`, reasoning-effort tuning.
"""

from __future__ import annotations

from harnessrl.harnesses.adapter import HarnessContext, HarnessResult, LaunchSpec, Mode, ShellTool
from harnessrl.harnesses.base import KEY_ENV, HarnessBase, TomlSection, toml_document, toml_str
from harnessrl.harnesses.parsing import as_dict, as_text, json_lines, outcome
from harnessrl.sandbox.spec import ExecResult

VERSION = "0.171.0"


def config_toml(ctx: HarnessContext, model: str) -> str:
    top = {
        "model": model,
        "model_provider": "harnessrl",
        "approval_policy": "never",
        "sandbox_mode": "danger-full-access",
        "check_for_update_on_startup": False,
    }
    provider = {
        "name": "harnessrl",
        "base_url": ctx.endpoint.base_url + "/v1",
        "env_key": KEY_ENV,
        "wire_api": "responses",
    }
    sections: list[TomlSection] = [
        ("", top),
        ("[model_providers.harnessrl]", provider),
        ("[analytics]", {"enabled": False}),
    ]
    for s in ctx.mcp_servers:
        server = {"command": s.command[0], "args": s.command[1:], "env": s.env or None}
        sections.append((f"[mcp_servers.{toml_str(s.name)}]", server))
    return toml_document(*sections)


class Codex(HarnessBase):
    """Its model is the neutral `policy`, a name Codex has no metadata for: it sends the tools and
    requests it sends any model of the user's own (a `namespace` tool among them)."""

    name = "codex"
    package = f"@openai/codex@{VERSION}"
    shell_tool = ShellTool("exec_command", "cmd")
    modes = (Mode("openai_responses", 9_649),)

    def prepare(self, ctx: HarnessContext) -> LaunchSpec:
        ctx.write_home_file(".codex/config.toml", config_toml(ctx, self.model(ctx)))
        argv = [self.executable(ctx), "exec", "--skip-git-repo-check"]
        argv += ["--dangerously-bypass-approvals-and-sandbox", "--json", ctx.prompt]
        env = {"CODEX_HOME": f"{ctx.home}/.codex", KEY_ENV: ctx.endpoint.api_key, "RUST_LOG": "error"}
        return LaunchSpec(argv=argv, env=env, cwd=ctx.workspace)

    def parse(self, res: ExecResult) -> HarnessResult:
        """Final message = text of the last `agent_message` item; `turn.failed` / `error` events = error."""
        final, errors, turns = "", [], 0
        for event in json_lines(res.stdout):
            kind, item = event.get("type"), as_dict(event.get("item"))
            if kind == "item.completed" and item.get("type") == "agent_message":
                final = as_text(item.get("text", ""))
            elif kind == "turn.completed":
                turns += 1
            elif kind in ("turn.failed", "error"):
                err = event.get("error")
                said = err.get("message", "") if isinstance(err, dict) else event.get("message", err)
                errors.append(as_text(said) or str(kind))
        return outcome(res, done=turns > 0, final=final, errors=errors, turns=turns or None)
