"""Real harness binaries (Claude Code, Codex; installed under the harness cache) against the live proxy,
run directly on the host in a temporary workspace: the harness must run the scripted tool call, finish
with `done`, and its second call must be spliced onto the first (token-in-token-out on real traffic).

OpenClaw runs once per API it can speak; with chat and Anthropic it moves a context message to the end
of each request, so its second call must be marked `retokenized` (a new branch), never spliced.

Marked `harness`; each test installs its pinned harness on first use (skipped only without npm).
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harnessrl.harnesses.install import NODE_BIN
from harnessrl.harnesses.registry import get_harness
from harnessrl.proxy.canonical import IMAGE_PLACEHOLDER
from harnessrl.proxy.server import ThreadedProxyServer
from harnessrl.proxy.sessions import SessionInfo
from harnessrl.proxy.testing import scripted_proxy, turn_from_decision
from harnessrl.types import ChatMessage, ModelCall, ToolCall

pytestmark = pytest.mark.harness
CLAUDE = get_harness("claude-code").install_dir() / "node_modules" / ".bin" / "claude"
CODEX = get_harness("codex").install_dir() / "node_modules" / ".bin" / "codex"
OPENCLAW_DIR = get_harness("openclaw").install_dir()


def install(name: str) -> None:
    """Install the pinned harness on first use, as CI does (skip only where npm is missing)."""
    if shutil.which("npm") is None:
        pytest.skip("npm is needed to install the harnesses")
    get_harness(name).ensure_installed()


def decisions(shared: Path, folder: str) -> list[Any]:
    paths = sorted((shared / "harness-traffic" / folder).glob("*.json"))
    return [turn_from_decision(json.loads(p.read_text())["reply"]["decision"]) for p in paths]


@pytest.fixture
def proxy(request: pytest.FixtureRequest, shared_fixtures: Path) -> Iterator[ThreadedProxyServer]:
    server = scripted_proxy(decisions(shared_fixtures, request.param)).start()
    yield server
    server.stop()


def run_cli(argv: list[str], work: Path, env: dict[str, str], stdin: int | None = None) -> str:
    """Run a harness CLI in `work` (at most 300 s); it must exit 0. Its stdout."""
    done = subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True, timeout=300, stdin=stdin)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def run_claude(info: SessionInfo, work: Path, home: Path, prompt: str) -> None:
    """Claude Code headless and bare on the proxy session `info`, in `work` with HOME `home`, every
    permission granted: it exits 0 and its last stream-json event's result is "done"."""
    env = {
        **os.environ,
        "HOME": str(home),
        "IS_SANDBOX": "1",
        "ANTHROPIC_BASE_URL": info.base_url,
        "ANTHROPIC_API_KEY": info.token,
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
    }
    argv = [str(CLAUDE), "-p", prompt, "--bare", "--output-format", "stream-json", "--verbose"]
    out = run_cli([*argv, "--dangerously-skip-permissions"], work, env)
    assert json.loads(out.strip().splitlines()[-1])["result"] == "done"


def assert_two_calls(calls: list[ModelCall], tool: str, render: str = "spliced") -> None:
    """Call 1 made the tool call, call 2 said `done`; call 2 spliced onto call 1 (or `retokenized`)."""
    first, second = calls
    assert [t.name for t in first.tool_calls] == [tool]
    if render == "retokenized":
        assert (second.text, second.render, second.spliced_from) == ("done", "retokenized", None)
        return
    assert (second.text, second.render, second.spliced_from) == ("done", "spliced", first.call_id)
    prefix = first.prompt_ids + first.output_ids
    assert second.prompt_ids[: len(prefix)] == prefix


@pytest.mark.parametrize("proxy", ["claude-code-bare"], indirect=True)
def test_claude_code_through_the_proxy(proxy: ThreadedProxyServer, tmp_path: Path) -> None:
    install("claude-code")
    info = proxy.server.deps.sessions.open("claude")
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir(), home.mkdir()
    run_claude(info, work, home, "create hello.txt")
    assert (work / "hello.txt").read_text() == "hi"
    assert_two_calls(proxy.server.deps.sessions.calls("claude"), "Bash")


@pytest.mark.parametrize("proxy", ["codex-responses"], indirect=True)
def test_codex_through_the_proxy(proxy: ThreadedProxyServer, tmp_path: Path) -> None:
    install("codex")
    info = proxy.server.deps.sessions.open("codex")
    work, codex_home = tmp_path / "work", tmp_path / "home" / ".codex"
    work.mkdir(), codex_home.mkdir(parents=True)
    (codex_home / "config.toml").write_text(
        'model = "policy"\nmodel_provider = "harnessrl"\napproval_policy = "never"\n'
        'sandbox_mode = "danger-full-access"\ncheck_for_update_on_startup = false\n\n'
        f'[model_providers.harnessrl]\nname = "harnessrl"\nbase_url = "{info.openai_base_url}"\n'
        'env_key = "HARNESSRL_API_KEY"\nwire_api = "responses"\n\n[analytics]\nenabled = false\n'
    )
    env = {**os.environ, "HOME": str(codex_home.parent), "CODEX_HOME": str(codex_home)}
    env |= {"HARNESSRL_API_KEY": info.token, "RUST_LOG": "error"}
    argv = [
        str(CODEX),
        "exec",
        "--skip-git-repo-check",
        "--dangerously-bypass-approvals-and-sandbox",
        "--json",
    ]
    out = run_cli([*argv, "create hello.txt"], work, env, stdin=subprocess.DEVNULL)
    events = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    messages = [e["item"]["text"] for e in events if e.get("item", {}).get("type") == "agent_message"]
    assert messages == ["done"]
    assert (work / "hello.txt").read_text() == "hi"
    recorded = proxy.server.deps.sessions.calls("codex")
    assert_two_calls(recorded, "exec_command")
    # a neutral model name: Codex has no metadata for it and offers its `namespace` tool too
    assert recorded[0].requested_model == "policy"
    prompt = proxy.server.deps.fmt.tokenizer.decode(recorded[0].prompt_ids)  # type: ignore[attr-defined]
    assert "multi_agent_v1.spawn_agent" in prompt


def png_bytes(width: int = 4, height: int = 4) -> bytes:
    """A real (grey) PNG file."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)

    rows = b"".join(b"\x00" + b"\x80" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def test_claude_code_reading_a_png_goes_on_with_a_placeholder(tmp_path: Path) -> None:
    install("claude-code")
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir(), home.mkdir()
    (work / "pic.png").write_bytes(png_bytes())
    read = ChatMessage(
        role="assistant", tool_calls=[ToolCall(name="Read", arguments={"file_path": str(work / "pic.png")})]
    )
    server = scripted_proxy([read, "done"]).start()
    try:
        info = server.server.deps.sessions.open("png")
        run_claude(info, work, home, "describe pic.png")
        first, second = server.server.deps.sessions.calls("png")
        assert [t.name for t in first.tool_calls] == ["Read"]
        assert (second.text, second.replaced_images, second.tags) == (
            "done",
            1,
            ["stream", "images_replaced"],
        )
        prompt = server.server.deps.fmt.tokenizer.decode(second.prompt_ids)  # type: ignore[attr-defined]
        assert IMAGE_PLACEHOLDER in prompt
    finally:
        server.stop()


OPENCLAW_APIS = {
    "openclaw-responses": ("openai-responses", "spliced"),
    "openclaw-chat": ("openai-completions", "retokenized"),
    "openclaw-anthropic": ("anthropic-messages", "retokenized"),
}


@pytest.mark.slow  # OpenClaw starts in 10-20 s on two cores; ~30 s per API here
@pytest.mark.parametrize("proxy", sorted(OPENCLAW_APIS), indirect=True)
def test_openclaw_through_the_proxy(
    proxy: ThreadedProxyServer, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    install("openclaw")
    api, render = OPENCLAW_APIS[request.node.callspec.params["proxy"]]
    info = proxy.server.deps.sessions.open("openclaw")
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir(), home.mkdir()
    cost = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}
    model = {"id": "policy", "name": "policy", "reasoning": False, "input": ["text"], "cost": cost}
    model |= {"contextWindow": 131072, "maxTokens": 4096}
    base = info.base_url if api == "anthropic-messages" else info.openai_base_url
    provider = {"baseUrl": base, "apiKey": info.token, "api": api, "models": [model]}
    config = {
        "models": {"providers": {"harnessrl": provider}},
        "agents": {"defaults": {"model": {"primary": "harnessrl/policy"}}},
    }
    (home / "cfg.json5").write_text(json.dumps(config))
    env = {**os.environ, "HOME": str(home), "NO_COLOR": "1"}
    env["PATH"] = f"{OPENCLAW_DIR / NODE_BIN}:{env['PATH']}"
    argv = [
        str(OPENCLAW_DIR / "node_modules" / ".bin" / "openclaw"),
        "agent",
        "exec",
        "--config",
        str(home / "cfg.json5"),
    ]
    argv += [
        "--cwd",
        str(work),
        "--model",
        "harnessrl/policy",
        "--timeout",
        "120",
        "--json",
        "create hello.txt",
    ]
    out = run_cli(argv, work, env)
    assert json.loads(out[out.find("{") :])["final"] == "done"
    assert (work / "hello.txt").read_text() == "hi"
    assert_two_calls(proxy.server.deps.sessions.calls("openclaw"), "exec", render)
