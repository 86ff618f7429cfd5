"""`harnessrl serve` as a real subprocess (scripted engine, Qwen3 tokenizer) and `harnessrl calls show`."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
from typer.testing import CliRunner

from harnessrl.cli import app
from harnessrl.types import ModelCall, ToolCall

REPO = Path(__file__).resolve().parents[1]
HARNESSRL = str(Path(sys.executable).parent / "harnessrl")


def test_serve_answers_any_key_and_flushes_on_ctrl_c(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps(["hello there"]))
    cmd = [HARNESSRL, "serve", "--engine", "scripted", "--model", "tiny-qwen3"]
    cmd += ["--script", str(script), "--port", "0", "--capture-dir", str(tmp_path / "cap")]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, cwd=REPO, env=env)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        match = re.search(r"http://127\.0\.0\.1:\d+", line)
        assert match, line
        url = match.group(0)
        body = {"model": "x", "max_tokens": 20, "messages": [{"role": "user", "content": "hi"}]}
        r = httpx.post(url + "/v1/messages", json=body, headers={"x-api-key": "whatever"}, timeout=60)
        assert r.json()["content"] == [{"type": "text", "text": "hello there"}]
        assert httpx.get(url + "/v1/models").json()["data"][0]["id"] == "tiny-qwen3"
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
    lines = (tmp_path / "cap" / "default" / "calls.jsonl").read_text().splitlines()
    (call,) = [ModelCall.model_validate_json(x) for x in lines]
    assert (call.dialect, call.text, call.requested_model, call.rollout_id) == (
        "anthropic",
        "hello there",
        "x",
        "default",
    )


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
    assert f"error: {path}:1: not a model call" in result.output
