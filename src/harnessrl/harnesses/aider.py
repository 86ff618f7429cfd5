"""Aider (PyPI `aider-chat`), headless: `aider --message PROMPT --model openai/<model> --edit-format diff`.

A Python harness (a venv of its locked wheels, `install.python_install`). It speaks OpenAI Chat
Completions through litellm (`openai/<model>` at `--openai-api-base`, streamed); a model metadata
file declares the context window and zero prices, so nothing is fetched. Git, analytics, update
checks, URL detection, linting and the repo map are off; its history files go to HOME, not the
workspace. It edits files through edit formats and runs no tool loop: `--message` is one model call,
after which Aider runs the shell commands the reply suggested in ```bash blocks (the `diff` format
collects them) and exits. Those it runs only when asked and answered yes: `--yes-always` answers
such questions "no" (`explicit_yes_required` in `aider/io.py` `confirm_ask`), so it is not given;
stdin is at end of file, and Aider takes a question's default at EOF, "yes" for "Run shell
command?". Each line of a block is its own command, so the reference turn joins its commands into one
block of one-line commands (a multi-line one piped through base64). Left out: chat mode, git, voice,
the browser GUI, its other edit formats.
"""

from __future__ import annotations

import base64
import json

from harnessrl.harnesses.adapter import TEXT_SHELL, HarnessContext, HarnessResult, LaunchSpec, Mode
from harnessrl.harnesses.base import HarnessBase, context_window
from harnessrl.harnesses.parsing import outcome
from harnessrl.sandbox.spec import ExecResult
from harnessrl.types import ChatMessage

VERSION = "0.86.2"
PRIMED = 4
"""Assistant turns in its first prompt: two worked examples of its edit format, an "Ok." after "I
switched to a new code base", an "Ok." after the (empty) list of files in the chat."""
OFF = [
    "--no-git", "--no-gitignore", "--no-analytics", "--no-check-update", "--no-show-release-notes",
    "--no-show-model-warnings", "--no-detect-urls", "--no-auto-lint", "--no-fancy-input", "--no-pretty",
    "--no-restore-chat-history", "--map-tokens", "0", "--encoding", "utf-8",
]  # fmt: skip


def one_line(command: str) -> str:
    """`command` as one line: Aider runs each line of a block separately."""
    if "\n" not in command:
        return command
    return f"printf %s {base64.b64encode(command.encode()).decode()} | base64 -d | bash"


class Aider(HarnessBase):
    name = "aider"
    package = f"aider-chat=={VERSION}"
    installer = "pypi"
    shell_tool = TEXT_SHELL
    modes = (Mode("openai_chat", 2751),)

    def reference_turns(self, *commands: str) -> list[ChatMessage | str]:
        """Its one call's reply, a ```bash block of one line per command, after the PRIMED assistant
        turns its prompt already holds (the scripted engine answers the k-th assistant turn)."""
        return [*["Ok."] * PRIMED, TEXT_SHELL.turn("\n".join(map(one_line, commands)))]

    def prepare(self, ctx: HarnessContext) -> LaunchSpec:
        model = f"openai/{self.model(ctx)}"
        window = context_window(ctx)
        info: dict[str, int | str] = {"max_input_tokens": window, "max_tokens": window}
        info |= {"max_output_tokens": window, "input_cost_per_token": 0, "output_cost_per_token": 0}
        info |= {"litellm_provider": "openai", "mode": "chat"}
        meta = ctx.write_home_file(".aider/model.metadata.json", json.dumps({model: info}))
        argv = [self.executable(ctx), "--model", model]  # the endpoint in env: argv is world-readable
        argv += ["--edit-format", "diff", "--model-metadata-file", meta, *OFF]
        argv += ["--chat-history-file", f"{ctx.home}/.aider/chat.md"]
        argv += ["--input-history-file", f"{ctx.home}/.aider/input.txt", "--message", ctx.prompt]
        env = {
            "PATH": self.launch_path(ctx),
            "OPENAI_API_KEY": ctx.endpoint.api_key,
            "OPENAI_API_BASE": ctx.endpoint.base_url + "/v1",
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "PYTHONDONTWRITEBYTECODE": "1",
            "TERM": "dumb",
        }
        return self.launch_spec(ctx, argv, env)

    def parse(self, res: ExecResult) -> HarnessResult:
        """Its stdout: a banner ending in `Repo-map: ...`, the streamed reply, `Tokens: N sent, M
        received.` once the call succeeded, then what the commands it ran printed. No such line: the
        call failed (it still exits 0; litellm's error is printed above)."""
        _, _, after = res.stdout.partition("\nRepo-map:")
        reply, found, _ = after.partition("\nTokens: ")
        final = reply.partition("\n")[2].strip() if found else ""
        return outcome(res, done=bool(found), final=final)
