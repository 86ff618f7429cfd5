"""Grok CLI (`@vibe-kit/grok-cli`, command `grok`), headless: `grok -p PROMPT`.

Its client is the OpenAI SDK on Chat Completions (not streamed in headless mode), at the base URL
of `~/.grok/user-settings.json` (`baseURL`, with `apiKey` and `defaultModel`); ours points it at the
endpoint. Headless mode approves every tool and prints each message of the conversation as one
JSON line (`{"role": ..., "content": ...}`), the last assistant one being the answer; a failed
model call ends the run with an assistant message `Sorry, I encountered an error: ...` and exit 0
(`parse` reads it as the harness's error). Its binary says 1.0.1 for `--version`
(hard-coded), whatever the package version. It has no update check or telemetry. It sends xAI's
`search_parameters` field (`mode: off` unless the model's name contains "grok"); the proxy ignores
it. Left out: MCP servers (it reads them only from the workspace's `.grok/settings.json`, which is
the policy's), Morph fast-apply (`MORPH_API_KEY` unset), the git sub-command, the TUI.
"""

from __future__ import annotations

from harnessrl.harnesses.adapter import HarnessContext, HarnessResult, LaunchSpec, Mode, ShellTool
from harnessrl.harnesses.base import HarnessBase
from harnessrl.harnesses.parsing import as_text, json_lines, outcome
from harnessrl.sandbox.spec import ExecResult

VERSION = "0.0.34"
CALL_FAILED = "Sorry, I encountered an error: "
ROUND_LIMIT = "Maximum tool execution rounds reached. Stopping to prevent infinite loops."
SETTINGS_VERSION = 2
"""Its settings schema version: an older one makes it rewrite the file (adding xAI model names)."""


class GrokCli(HarnessBase):
    name = "grok-cli"
    says_version = "1.0.1"
    package = f"@vibe-kit/grok-cli@{VERSION}"
    command = "grok"
    shell_tool = ShellTool("bash", "command")
    modes = (Mode("openai_chat", 2_317),)

    def prepare(self, ctx: HarnessContext) -> LaunchSpec:
        model = self.model(ctx)
        settings = {
            "apiKey": ctx.endpoint.api_key,
            "baseURL": ctx.endpoint.base_url + "/v1",
            "defaultModel": model,
            "models": [model],
            "settingsVersion": SETTINGS_VERSION,
        }
        ctx.write_json(".grok/user-settings.json", settings)
        argv = [self.executable(ctx), "-p", ctx.prompt, "-m", model]
        return self.launch_spec(ctx, argv, {})

    def parse(self, res: ExecResult) -> HarnessResult:
        """The last assistant message line is the answer. Its errors: an `Error: ...` message with a
        non-zero exit (it could not start), the one message `Sorry, I encountered an error: ...` (a
        failed call: it then prints only the prompt and that, and exits 0), the round limit's notice."""
        said = [m for m in json_lines(res.stdout) if m.get("role") == "assistant"]
        final = as_text(said[-1].get("content")).strip() if said else ""
        failed = (
            (res.returncode != 0 and final.startswith("Error: "))
            or (len(said) == 1 and final.startswith(CALL_FAILED))
            or final == ROUND_LIMIT
        )
        return outcome(
            res,
            done=bool(said),
            final="" if failed else final,
            errors=[final] if failed else [],
            turns=len(said) or None,
        )
