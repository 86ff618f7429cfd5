"""ATIF export (`harnessrl calls export --format atif`, `formats/atif.py`) of real rollout folders: a
rollout through a real harness with the scripted engine, exported, then checked against ATIF v1.8 as
Harbor's models define it: `tests/fixtures/atif/atif-v1.8.schema.json` (required fields, types,
no unknown fields; see its NOTES.md) and, here, what only their validators state."""

from __future__ import annotations

import json
import shutil
from datetime import datetime
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from harness_solve import harness_test, scripted_config
from typer.testing import CliRunner

from harnessrl.cli import app
from harnessrl.formats.atif import read_trajectory
from harnessrl.formats.rollout_dir import read_rollout
from harnessrl.rollout import RolloutJob
from harnessrl.rollout.session import RolloutStack
from harnessrl.tasks import load_tasks
from harnessrl.types import Rollout, RolloutStatus

SCHEMA = json.loads((Path(__file__).parent / "fixtures" / "atif" / "atif-v1.8.schema.json").read_text())
AGENT_ONLY = ("model_name", "reasoning_effort", "reasoning_content", "tool_calls", "metrics")
pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")


def check_atif(doc: dict[str, Any]) -> None:
    """The schema, then the models' validators (`Trajectory`, `Step`, `ContentPart`)."""
    jsonschema.validate(doc, SCHEMA)
    for i, step in enumerate(doc["steps"]):
        assert step["step_id"] == i + 1
        if step["source"] != "agent":
            assert [f for f in AGENT_ONLY if step.get(f) is not None] == []
        if "timestamp" in step:
            datetime.fromisoformat(step["timestamp"].replace("Z", "+00:00"))
        ids = [tc["tool_call_id"] for tc in step.get("tool_calls") or []]
        assert len(ids) == len(set(ids))
        for result in (step.get("observation") or {}).get("results", []):
            assert result.get("source_call_id") is None or result["source_call_id"] in ids
        if step.get("llm_call_count") == 0 and step["source"] == "agent":
            assert step.get("metrics") is None and step.get("reasoning_content") is None


async def one_rollout(harness: str, out: Path) -> Rollout:
    """Bundled task_0000 through `harness`, the scripted engine replaying its reference."""
    task = next(t for t in load_tasks("bundled", split="train").tasks if t.id == "task_0000")
    async with RolloutStack.from_config(scripted_config(harness, out), [task]) as stack:
        assert stack.runner is not None
        [rollout] = await stack.runner.run_many([RolloutJob(task, harness, "r0")])
    assert (rollout.status, rollout.reward) == (RolloutStatus.OK, 1.0), rollout.status_reason
    return rollout


def export(path: Path, *args: str) -> dict[str, Any]:
    result = CliRunner().invoke(app, ["calls", "export", str(path), "--format", "atif", *args])
    assert result.exit_code == 0, result.output
    assert result.stdout == f"wrote {path / 'trajectory.json'}\n"
    return read_trajectory(path / "trajectory.json")


def check_against_calls(doc: dict[str, Any], rollout: Rollout) -> None:
    """Every call is one agent step carrying its exact ids and log-probs."""
    calls = rollout.calls
    assert [s["source"] for s in doc["steps"]] == ["user"] + ["agent"] * len(calls)
    for step, call in zip(doc["steps"][1:], calls, strict=True):
        metrics = step["metrics"]
        assert metrics["prompt_token_ids"] == call.prompt_ids
        assert metrics["completion_token_ids"] == call.output_ids
        assert metrics["logprobs"] == call.output_logprobs
        assert (metrics["prompt_tokens"], metrics["completion_tokens"]) == (
            len(call.prompt_ids),
            len(call.output_ids),
        )
        assert step["message"] == call.text
        assert [tc["function_name"] for tc in step.get("tool_calls", [])] == [t.name for t in call.tool_calls]
        assert step["extra"]["call_id"] == call.call_id
    assert doc["final_metrics"] == {
        "total_prompt_tokens": sum(len(c.prompt_ids) for c in calls),
        "total_completion_tokens": sum(len(c.output_ids) for c in calls),
        "total_steps": len(calls) + 1,
    }
    assert doc["extra"] == {
        "task_id": "task_0000",
        "group_id": rollout.group_id,
        "reward": 1.0,
        "status": "ok",
    }
    assert (doc["schema_version"], doc["session_id"], doc["trajectory_id"]) == ("ATIF-v1.8", "r0", "r0")


async def test_whitebox_rollout_exports_as_atif(tmp_path: Path) -> None:
    rollout = await one_rollout("whitebox:00000", tmp_path)
    rdir = tmp_path / "r0"
    assert read_rollout(rdir).calls == rollout.calls
    doc = export(rdir)
    check_atif(doc)
    check_against_calls(doc, rollout)
    first, last = doc["steps"][1], doc["steps"][-1]
    assert doc["agent"]["name"] == "whitebox" and doc["agent"]["extra"]["configuration"] == "whitebox:00000"
    assert doc["steps"][0]["message"].startswith("<|im_start|>system\n")  # the rendered first prompt
    assert doc["steps"][0]["message"].endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")
    [tool] = first["tool_calls"]
    [result] = first["observation"]["results"]
    assert result["source_call_id"] == tool["tool_call_id"]
    assert "<|im_start|>" in result["content"]  # the tool turn as the template rendered it
    assert "observation" not in last  # nothing came after the final answer
    ids_only = export(rdir, "--ids")
    check_atif(ids_only)
    assert ids_only["steps"][0]["message"] == ""
    assert "content" not in ids_only["steps"][1]["observation"]["results"][0]
    added = ids_only["steps"][1]["observation"]["results"][0]["extra"]["token_ids"]
    head = len(rollout.calls[0].prompt_ids) + len(rollout.calls[0].output_ids)
    assert added == rollout.calls[1].prompt_ids[head:]


@harness_test
async def test_claude_code_rollout_exports_as_atif(tmp_path: Path) -> None:
    rollout = await one_rollout("claude-code", tmp_path)
    doc = export(tmp_path / "r0")
    check_atif(doc)
    check_against_calls(doc, rollout)
    assert doc["agent"]["name"] == "claude-code"
    assert doc["agent"]["version"] == rollout.calls[0].headers["user-agent"].split(" ")[0].split("/")[1]
    assert any(step.get("tool_calls") for step in doc["steps"])


def test_the_schema_is_strict() -> None:
    """The fixture schema refuses what Harbor's models refuse (so a passing export means something)."""
    good = {
        "schema_version": "ATIF-v1.8",
        "agent": {"name": "a", "version": "1"},
        "steps": [
            {"step_id": 1, "source": "user", "message": "hi"},
            {
                "step_id": 2,
                "source": "agent",
                "message": "",
                "metrics": {"logprobs": [-0.5], "completion_token_ids": [7]},
            },
        ],
    }
    jsonschema.validate(good, SCHEMA)
    bad: list[dict[str, Any]] = [
        {**good, "unknown": 1},
        {**good, "steps": []},
        {**good, "schema_version": "ATIF-v2.0"},
        {**good, "agent": {"name": "a"}},
        {**good, "steps": [{"step_id": 0, "source": "user", "message": ""}]},
        {**good, "steps": [{"step_id": 1, "source": "robot", "message": ""}]},
        {**good, "steps": [{"step_id": 1, "source": "agent", "message": "", "metrics": {"logprobs": ["x"]}}]},
        {
            **good,
            "steps": [
                {"step_id": 1, "source": "agent", "message": "", "tool_calls": [{"tool_call_id": "t"}]}
            ],
        },
    ]
    for doc in bad:
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(doc, SCHEMA)


def test_export_errors_name_the_path(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["calls", "export", str(tmp_path)])
    assert (result.exit_code, result.stderr) == (
        2,
        f"error: {tmp_path}: no rollout folder (rollout.json or calls.jsonl) here or below\n",
    )
    result = CliRunner().invoke(app, ["calls", "export", str(tmp_path), "--format", "otlp"])
    assert (result.exit_code, result.stderr) == (
        2,
        "error: unknown export format 'otlp' (expected one of atif)\n",
    )
