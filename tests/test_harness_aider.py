"""Aider (a Python harness from PyPI): its model metadata, command line and stdout parsing; and
(marked `harness`) the real Aider solving a bundled task through the proxy with the scripted engine:
one call whose reply suggests a ```bash block, which Aider runs (stdin at EOF answers its "Run shell
command?" with the default, yes) before it exits."""

from __future__ import annotations

import json
from pathlib import Path

from harness_solve import adapter_context, harness_test, solve_and_fail

from harnessrl.harnesses import get_harness
from harnessrl.harnesses.aider import one_line
from harnessrl.sandbox import ExecResult
from harnessrl.types import ChatMessage

OUT = """Detected dumb terminal, disabling fancy input and pretty output.

Aider v0.86.2
Model: openai/policy with diff edit format
Git repo: none
Repo-map: disabled

```bash
printf hi > hello.txt
```
Tokens: 2.4k sent, 16 received.

printf hi > hello.txt
Run shell command? (Y)es/(N)o/(D)on't ask again [Yes]:
Running printf hi > hello.txt
"""


def test_aider_config_and_launch(tmp_path: Path) -> None:
    launch = get_harness("aider").prepare(adapter_context(tmp_path))
    assert json.loads((tmp_path / ".aider" / "model.metadata.json").read_text()) == {
        "openai/policy": {
            "max_input_tokens": 131072, "max_tokens": 131072, "max_output_tokens": 131072,
            "input_cost_per_token": 0, "output_cost_per_token": 0, "litellm_provider": "openai",
            "mode": "chat",
        }
    }  # fmt: skip
    assert launch.argv == [
        "/cache/h/bin/aider", "--model", "openai/policy", "--edit-format", "diff", "--model-metadata-file",
        "/home/agent/.aider/model.metadata.json", "--no-git", "--no-gitignore", "--no-analytics",
        "--no-check-update", "--no-show-release-notes", "--no-show-model-warnings", "--no-detect-urls",
        "--no-auto-lint", "--no-fancy-input", "--no-pretty", "--no-restore-chat-history",
        "--map-tokens", "0", "--encoding", "utf-8", "--chat-history-file", "/home/agent/.aider/chat.md",
        "--input-history-file", "/home/agent/.aider/input.txt", "--message", "do it",
    ]  # fmt: skip
    assert "--yes-always" not in launch.argv  # it would answer "Run shell command?" with no
    assert launch.env["OPENAI_API_KEY"] == "tok" and launch.env["LITELLM_LOCAL_MODEL_COST_MAP"] == "True"
    # the session's URL (its token) in env, not argv: /proc/<pid>/cmdline is readable by every host uid
    assert launch.env["OPENAI_API_BASE"] == "http://127.0.0.1:18080/r/tok/v1"
    assert not [a for a in launch.argv if "/r/tok" in a]
    assert "/cache/h" not in launch.env["PATH"] and launch.cwd == "/workspace"


def test_aider_reference_is_one_reply_after_its_primed_turns() -> None:
    turns = get_harness("aider").reference_turns("printf hi > a", "cat <<EOF > b\nx\nEOF")
    assert turns[:4] == ["Ok."] * 4
    assert turns[4] == ChatMessage(
        role="assistant",
        content="```bash\nprintf hi > a\nprintf %s Y2F0IDw8RU9GID4gYgp4CkVPRg== | base64 -d | bash\n```",
    )
    assert one_line("ls") == "ls" and len(turns) == 5


def test_aider_parse() -> None:
    aider = get_harness("aider")
    assert aider.parse(ExecResult(0, OUT, "", False, 1.0)).model_dump() == {
        "ok": True, "exit_code": 0, "final_message": "```bash\nprintf hi > hello.txt\n```",
        "timed_out": False, "error": "", "turns": None,
    }  # fmt: skip
    failed_call = "Aider v0.86.2\nRepo-map: disabled\n\nlitellm.APIConnectionError: boom\n"
    failed = aider.parse(ExecResult(0, failed_call, "", False, 1.0))  # it exits 0 all the same
    assert (failed.ok, failed.final_message) == (False, "")
    assert failed.error.endswith("litellm.APIConnectionError: boom")
    hostile = aider.parse(
        ExecResult(0, "x\nRepo-map: -\n\ud800\x00 hi\nTokens: \nRepo-map:" * 3, "", False, 1.0)
    )
    assert (hostile.ok, hostile.final_message) == (True, "?\x00 hi")
    assert aider.parse(ExecResult(0, "\nTokens: 1 sent\nRepo-map: x", "", False, 1.0)).ok is False


@harness_test
async def test_aider_solves_task_and_wrong_sequence_fails(tmp_path: Path) -> None:
    good, bad = await solve_and_fail("aider", tmp_path)  # 1.0; the wrong one < 1.0
    assert [c.dialect for c in good.calls] == ["openai_chat"]  # one call: it has no tool loop
    assert "stream" in good.calls[0].tags and not good.calls[0].tool_calls
    assert good.calls[0].text == "```bash\nprintf 'Hello, harness!\\n' > hello.txt\n```"
    assert (good.exit_code, bad.exit_code) == (0, 0)
