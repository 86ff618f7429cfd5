"""Code Puppy (a Python harness from PyPI): its config files, command line and output parsing; and
(marked `harness`) the real Code Puppy solving a bundled task through the proxy with the scripted
engine (its `shell` tool, every argument sent as its history re-sends them: the calls splice)."""

from __future__ import annotations

import json
from pathlib import Path

from harness_solve import adapter_context, harness_test, solve_and_fail

from harnessrl.harnesses import McpServer, get_harness
from harnessrl.harnesses.code_puppy import LAUNCH, MARK
from harnessrl.sandbox import ExecResult

USAGE = '{"input_tokens": 7439, "output_tokens": 32, "requests": 2, "tool_calls": 1, "cost_usd": null}'


def test_code_puppy_config_and_launch(tmp_path: Path) -> None:
    launch = get_harness("code-puppy").prepare(adapter_context(tmp_path))
    assert json.loads((tmp_path / ".code_puppy" / "extra_models.json").read_text()) == {
        "policy": {
            "type": "custom_openai",
            "name": "policy",
            "custom_endpoint": {"url": "http://127.0.0.1:18080/r/tok/v1", "api_key": "$OPENAI_API_KEY"},
            "context_length": 131072,
        }
    }
    assert (tmp_path / ".code_puppy" / "puppy.cfg").read_text() == (
        "[puppy]\npuppy_name = puppy\nowner_name = harnessrl\nmodel = policy\nyolo_mode = true\n"
        "auto_save_session = false\n"
    )
    usage = "/home/agent/.code_puppy/usage.json"
    assert launch.argv == [
        "/bin/sh", "-c", LAUNCH, "puppy", usage, "/cache/h/bin/code-puppy", "--disable-ask-user-question",
        "--usage-file", usage, "-m", "policy", "-p", "do it",
    ]  # fmt: skip
    assert launch.env["OPENAI_API_KEY"] == "tok" and launch.env["NO_VERSION_UPDATE"] == "1"
    assert "/cache/h" not in launch.env["PATH"] and launch.cwd == "/workspace"


def test_code_puppy_mcp_servers_bound_to_its_agent(tmp_path: Path) -> None:
    mcp = (McpServer("files", ["python3", "-m", "srv"], {"K": "v"}),)
    get_harness("code-puppy").prepare(adapter_context(tmp_path, mcp_servers=mcp))
    assert json.loads((tmp_path / ".code_puppy" / "mcp_servers.json").read_text()) == {
        "mcp_servers": {
            "files": {"type": "stdio", "command": "python3", "args": ["-m", "srv"], "env": {"K": "v"}}
        }
    }
    assert json.loads((tmp_path / ".code_puppy" / "mcp_agent_bindings.json").read_text()) == {
        "bindings": {"code-puppy": {"files": {"auto_start": True}}}
    }
    get_harness("code-puppy").prepare(adapter_context(tmp_path / "none"))
    assert not (tmp_path / "none" / ".code_puppy" / "mcp_servers.json").exists()


def test_code_puppy_parse() -> None:
    puppy = get_harness("code-puppy")
    out = (
        f"Executing prompt: do it\n\x1b]11;#1a1b26\x07 shell  ls\n\n\ndone\n\n\x1b]104\x07\n{MARK}\n{USAGE}\n"
    )
    assert puppy.parse(ExecResult(0, out, "", False, 1.0)).model_dump() == {
        "ok": True, "exit_code": 0, "final_message": "done", "timed_out": False, "error": "", "turns": 2,
    }  # fmt: skip
    # an error is printed and it exits 0, but it writes no usage file: not done
    failed = puppy.parse(
        ExecResult(0, f"Error: 400 prompt too long\n{MARK}\ncat: usage.json: No such file\n", "", False, 1.0)
    )
    assert (failed.ok, failed.final_message, failed.turns) == (False, "", None)
    assert failed.error.startswith("Error: 400 prompt too long")
    forged = puppy.parse(ExecResult(0, f'\ud800 {MARK}\n{{"requests": -1}}\n', "", False, 1.0))
    assert (forged.ok, forged.final_message, forged.turns) == (True, "?", None)
    garbled = puppy.parse(ExecResult(0, f'{MARK}\n{{"requests": 2}}\n\ud800\n', "", False, 1.0))
    assert (garbled.ok, garbled.turns) == (False, None)


@harness_test
async def test_code_puppy_solves_task_and_wrong_sequence_fails(tmp_path: Path) -> None:
    good, _ = await solve_and_fail("code-puppy", tmp_path)  # 1.0; the wrong one < 1.0
    assert [c.dialect for c in good.calls] == ["openai_chat", "openai_chat"]
    assert all("stream" in c.tags for c in good.calls)
    assert good.calls[0].tool_calls[0].arguments == {
        "command": "printf 'Hello, harness!\\n' > hello.txt", "cwd": None, "timeout": 60, "background": False,
    }  # fmt: skip
    assert good.calls[1].render == "spliced" and good.calls[1].spliced_from == good.calls[0].call_id
