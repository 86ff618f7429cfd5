"""pi: its models.json per API, command line and JSON-event parsing; and (marked `harness`) the real
pi solving a bundled task through the proxy with the scripted engine, in each of its four APIs (the
default, Chat Completions, in the default run; the other three `slow`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from harness_solve import adapter_context, harness_test, solve_and_fail

from harnessrl.harnesses import McpServer, get_harness
from harnessrl.sandbox import ExecResult


@pytest.mark.parametrize(
    ("api", "base"),
    [
        ("openai-completions", "http://127.0.0.1:18080/r/tok/v1"),
        ("openai-responses", "http://127.0.0.1:18080/r/tok/v1"),
        ("anthropic-messages", "http://127.0.0.1:18080/r/tok"),
        ("google-generative-ai", "http://127.0.0.1:18080/r/tok/v1beta"),
    ],
)
def test_pi_models_config_and_launch(tmp_path: Path, api: str, base: str) -> None:
    options = {} if api == "openai-completions" else {"api": api}
    mcp = (McpServer("files", ["python3", "-m", "srv"]),)  # pi has no MCP client: ignored
    launch = get_harness("pi").prepare(adapter_context(tmp_path, options=options, mcp_servers=mcp))
    models = json.loads((tmp_path / ".pi" / "agent" / "models.json").read_text())
    assert models == {
        "providers": {
            "harnessrl": {
                "baseUrl": base,
                "api": api,
                "apiKey": "HARNESSRL_API_KEY",
                "models": [
                    {
                        "id": "policy",
                        "name": "policy",
                        "reasoning": False,
                        "input": ["text"],
                        "contextWindow": 131072,
                        "maxTokens": 8192,
                        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
                    }
                ],
            }
        }
    }
    settings = json.loads((tmp_path / ".pi" / "agent" / "settings.json").read_text())
    assert settings == {"enableInstallTelemetry": False, "quietStartup": True}
    assert launch.argv == [
        "/cache/h/node_modules/.bin/pi", "-p", "--mode", "json", "--no-session", "--provider", "harnessrl",
        "--model", "policy", "--no-extensions", "--no-skills", "--no-prompt-templates", "--no-themes",
        "do it",
    ]  # fmt: skip
    assert {k: launch.env[k] for k in ("PI_CODING_AGENT_DIR", "HARNESSRL_API_KEY", "PI_OFFLINE")} == {
        "PI_CODING_AGENT_DIR": "/home/agent/.pi/agent",
        "HARNESSRL_API_KEY": "tok",
        "PI_OFFLINE": "1",
    }


def test_pi_rejects_an_unknown_api(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="pi api must be one of"):
        get_harness("pi").check_options({"api": "grpc"})


def assistant(text: str, stop: str = "stop", **extra: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": [{"type": "text", "text": text}], "stopReason": stop, **extra}


def test_pi_parse() -> None:
    pi = get_harness("pi")
    call = {"role": "assistant", "content": [{"type": "toolCall", "name": "bash"}], "stopReason": "toolUse"}
    messages = [{"role": "user", "content": "do it"}, call, {"role": "toolResult"}, assistant("done")]
    out = "\n".join(
        [json.dumps({"type": "session"}), "noise", json.dumps({"type": "agent_end", "messages": messages})]
    )
    assert pi.parse(ExecResult(0, out, "", False, 1.0)).model_dump() == {
        "ok": True, "exit_code": 0, "final_message": "done", "timed_out": False, "error": "", "turns": 2,
    }  # fmt: skip
    failed = {"type": "agent_end", "messages": [assistant("", "error", errorMessage="400 too long")]}
    parsed = pi.parse(ExecResult(1, json.dumps(failed), "", False, 1.0))
    assert (parsed.ok, parsed.error, parsed.final_message) == (False, "error: 400 too long", "")
    crashed = pi.parse(ExecResult(-15, "", "killed\n", True, 1.0))
    assert (crashed.ok, crashed.timed_out, crashed.error) == (False, True, "killed")


SLOW = pytest.mark.slow
APIS = [
    pytest.param("openai-completions", "openai_chat", id="chat"),
    pytest.param("openai-responses", "openai_responses", id="responses", marks=SLOW),
    pytest.param("anthropic-messages", "anthropic", id="anthropic", marks=SLOW),
    pytest.param("google-generative-ai", "gemini", id="gemini", marks=SLOW),
]


@harness_test
@pytest.mark.parametrize(("api", "dialect"), APIS)
async def test_pi_solves_task_and_wrong_sequence_fails(tmp_path: Path, api: str, dialect: str) -> None:
    good, _ = await solve_and_fail("pi", tmp_path, {"api": api})  # 1.0; the wrong one < 1.0
    assert [c.dialect for c in good.calls] == [dialect, dialect]
    assert good.calls[1].render == "spliced" and good.calls[1].spliced_from == good.calls[0].call_id
