"""`harnessrl serve` as a real subprocess (scripted engine, Qwen3 tokenizer) and `harnessrl calls show`."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from harnessrl.cli import app
from harnessrl.formats.calls import read_calls
from harnessrl.proxy import grammar
from harnessrl.types import ModelCall, ToolCall

REPO = Path(__file__).resolve().parents[1]
HARNESSRL = str(Path(sys.executable).parent / "harnessrl")


class Serve:
    """`harnessrl serve` as a subprocess; stderr is read by a thread so nothing waits on a pipe."""

    def __init__(
        self, tmp_path: Path, *, ignore_sigint: bool = False, turns: list[Any] | None = None
    ) -> None:
        script = tmp_path / "script.json"
        script.write_text(json.dumps(turns or ["hello there"]))
        cmd = [HARNESSRL, "serve", "--engine", "scripted", "--model", "tiny-qwen3"]
        cmd += ["--script", str(script), "--port", "0", "--capture-dir", str(tmp_path / "cap")]
        env = {**os.environ, "OMP_NUM_THREADS": "1"}
        # like `cmd &` in a script or nohup: SIGINT ignored from the start
        pre = (lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)) if ignore_sigint else None
        self.proc = subprocess.Popen(
            cmd, stderr=subprocess.PIPE, text=True, cwd=REPO, env=env, preexec_fn=pre
        )
        self.lines: list[str] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.capture = tmp_path / "cap" / "default" / "calls.jsonl"

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line)

    def url(self, timeout: float = 180.0) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in list(self.lines):
                match = re.search(r"http://127\.0\.0\.1:\d+", line)
                if match:
                    return match.group(0)
            assert self.proc.poll() is None, "".join(self.lines)
            time.sleep(0.05)
        raise AssertionError(f"no URL within {timeout} s: {''.join(self.lines)}")

    def call(self, url: str, text: str = "hi") -> None:
        body = {"model": "x", "max_tokens": 20, "messages": [{"role": "user", "content": text}]}
        r = httpx.post(url + "/v1/messages", json=body, headers={"x-api-key": "whatever"}, timeout=120)
        assert r.json()["content"] == [{"type": "text", "text": "hello there"}]

    def stop(self, sig: int) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout=120)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait(timeout=30)
            self.reader.join(timeout=30)

    def recorded(self) -> list[ModelCall]:
        return [ModelCall.model_validate_json(x) for x in self.capture.read_text().splitlines()]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["sigint", "sigterm"])
def test_serve_answers_any_key_and_exits_cleanly_on_a_signal(tmp_path: Path, sig: int) -> None:
    serve = Serve(tmp_path)
    try:
        url = serve.url()
        serve.call(url)
        assert httpx.get(url + "/v1/models", timeout=60).json()["data"][0]["id"] == "tiny-qwen3"
    finally:
        code = serve.stop(sig)
    assert code == 0, "".join(serve.lines)
    assert "1 calls written to" in "".join(serve.lines)
    (call,) = serve.recorded()
    assert (call.dialect, call.text, call.requested_model, call.rollout_id) == (
        "anthropic",
        "hello there",
        "x",
        "default",
    )


def test_serve_answers_gemini_generate_and_stream_over_plain_http(tmp_path: Path) -> None:
    serve = Serve(tmp_path)
    try:
        url = serve.url() + "/v1beta/models/gemini-x"
        headers = {"x-goog-api-key": "whatever"}
        body = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
        reply = httpx.post(url + ":generateContent", json=body, headers=headers, timeout=120).json()
        assert reply["candidates"][0]["content"] == {"parts": [{"text": "hello there"}], "role": "model"}
        body["contents"][0]["parts"][0]["text"] = "hi again"
        r = httpx.post(url + ":streamGenerateContent?alt=sse", json=body, headers=headers, timeout=120)
        assert r.headers["content-type"].startswith("text/event-stream")
        assert grammar.check_gemini(r.content)["parts"] == [{"text": "hello there"}]
    finally:
        code = serve.stop(signal.SIGTERM)
    assert code == 0, "".join(serve.lines)
    assert [(c.dialect, c.requested_model, c.tags) for c in serve.recorded()] == [
        ("gemini", "gemini-x", []),
        ("gemini", "gemini-x", ["stream"]),
    ]


def test_serve_with_sigint_ignored_at_start_still_exits_on_sigint(tmp_path: Path) -> None:
    serve = Serve(tmp_path, ignore_sigint=True)
    try:
        serve.call(serve.url())
    finally:
        code = serve.stop(signal.SIGINT)
    assert code == 0, "".join(serve.lines)
    assert [c.text for c in serve.recorded()] == ["hello there"]


def test_serve_killed_hard_keeps_every_answered_call(tmp_path: Path) -> None:
    serve = Serve(tmp_path)
    try:
        url = serve.url()
        for k in range(3):
            serve.call(url, f"question {k}")
    finally:
        code = serve.stop(signal.SIGKILL)
    assert code == -signal.SIGKILL
    recorded = serve.recorded()
    assert [(c.index, c.text) for c in recorded] == [
        (0, "hello there"),
        (1, "hello there"),
        (2, "hello there"),
    ]
    assert read_calls(serve.capture) == recorded


def test_serve_reports_a_bad_engine_setup(tmp_path: Path) -> None:
    cmd = [HARNESSRL, "serve", "--engine", "scripted", "--model", "tiny-qwen3"]
    start = time.monotonic()
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, timeout=120)
    assert done.returncode == 1
    assert "needs engine.script" in done.stderr
    assert time.monotonic() - start < 120


def test_calls_show_prints_one_row_per_call(tmp_path: Path) -> None:
    calls = [
        ModelCall(
            call_id="a",
            rollout_id="r",
            index=0,
            dialect="anthropic",
            requested_model="claude-x",
            prompt_ids=[1, 2, 3],
            output_ids=[4, 5],
            output_logprobs=[0.0, 0.0],
            tool_calls=[ToolCall(name="exec", arguments={"command": "ls"})],
            tags=["stream", "compaction_request"],
        ),
        ModelCall(
            call_id="b",
            rollout_id="r",
            index=1,
            dialect="openai_responses",
            requested_model="gpt-x",
            prompt_ids=list(range(11)),
            output_ids=[7],
            output_logprobs=[-0.5],
            render="spliced",
            text="done",
            replay_of="a",
        ),
    ]
    path = tmp_path / "calls.jsonl"
    path.write_text("".join(c.model_dump_json() + "\n" for c in calls))
    result = CliRunner().invoke(app, ["calls", "show", str(path)])
    assert result.exit_code == 0, result.output
    rows = [
        line
        for line in result.output.splitlines()
        if "│" in line and ("anthropic" in line or "openai" in line)
    ]
    cells = [[c.strip() for c in row.split("│")[1:-1]] for row in rows]
    assert cells[0][:8] == ["0", "anthropic", "claude-x", "rendered", "3", "2", "stop", "compaction_request"]
    assert cells[0][8] == 'exec({"command": "ls"})'
    assert cells[1] == ["1", "openai_responses", "gpt-x", "spliced", "11", "1", "stop", "replay_of=a", "done"]


def test_calls_show_rejects_garbage(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"not": "a call"}\n')
    result = CliRunner().invoke(app, ["calls", "show", str(path)])
    assert result.exit_code == 1
    assert f"error: {path}:1: not a ModelCall" in result.output
