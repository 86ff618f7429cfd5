"""`trajectory.json`: a rollout as an ATIF trajectory (Harbor's Agent Trajectory Interchange Format v1.8).

    trajectory(rollout, decode)                  the ATIF document of one rollout (a JSON object)
    write_trajectory(path, doc)                  the one writer (`harnessrl calls export --format atif`)
    read_trajectory(path)                        the one reader: the JSON object, FormatError otherwise

ATIF is Harbor's format for agent runs (its pydantic models: `harbor/models/trajectories/`, schema
`ATIF-v1.8`); other tools (Harbor's viewer, SFT and RL pipelines) read it. One rollout maps onto it so:

- step 1 (`source: "user"`): the first call's whole prompt as the model saw it (system prompt, tools
  and the task, rendered by the chat template), decoded with the rollout's tokenizer; "" without one;
- one `source: "agent"` step per model call, in arrival order: the parsed text (`message`), reasoning,
  tool calls, and `metrics` with the exact prompt and completion token ids and the sampling log-probs
  (`prompt_token_ids`, `completion_token_ids`, `logprobs`: what RL consumers need); `llm_call_count` 1;
  `extra` keeps what ATIF has no field for (call id, render mode, finish reason, tags, weights version);
- the step's `observation`: what the harness added to the next call's prompt after this call's prompt
  and output (tool results, user turns), decoded, when the next prompt extends this call; one result,
  tied to the step's tool call when it made exactly one (the tokens do not say which result is whose);
- `final_metrics`: token totals and the step count; the reward, status and fault go to `extra`.

Sub-agent and compaction calls are steps like the others (their `extra.tags` say which); a call
whose prompt does not extend the previous one simply has no observation before it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from harnessrl.formats import read_json_object
from harnessrl.types import HarnessName, ModelCall, Rollout

ATIF_VERSION = "ATIF-v1.8"
TRAJECTORY_FILE = "trajectory.json"
Decode = Callable[[list[int]], str]


def _timestamp(seconds: float) -> str | None:
    return datetime.fromtimestamp(seconds, tz=UTC).isoformat() if seconds > 0 else None


def _tool_calls(call: ModelCall) -> list[dict[str, Any]]:
    """ATIF tool calls, ids unique within the step (a harness may send none or repeat one)."""
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for i, tc in enumerate(call.tool_calls):
        tid = tc.id if tc.id and tc.id not in seen else f"{call.call_id}-tool-{i}"
        seen.add(tid)
        extra = {"type": tc.type} if tc.type != "function" else None
        out.append({"tool_call_id": tid, "function_name": tc.name, "arguments": dict(tc.arguments)})
        if extra:
            out[-1]["extra"] = extra
    return out


def _added_tokens(call: ModelCall, following: ModelCall | None) -> list[int] | None:
    """The tokens the next call's prompt adds after this call's prompt and output, or None when it
    does not extend them (another branch, a sub-agent, the last call)."""
    if following is None:
        return None
    head = [*call.prompt_ids, *call.output_ids]
    if following.prompt_ids[: len(head)] != head:
        return None
    return following.prompt_ids[len(head) :]


def _observation(
    call: ModelCall, following: ModelCall | None, tools: list[dict[str, Any]], decode: Decode | None
) -> dict[str, Any] | None:
    added = _added_tokens(call, following)
    if not added:
        return None
    result: dict[str, Any] = {}
    if len(tools) == 1:
        result["source_call_id"] = tools[0]["tool_call_id"]
    if decode is not None:
        result["content"] = decode(added)
    else:
        result["extra"] = {"token_ids": added}
    return {"results": [result]}


def _agent_step(
    step_id: int, call: ModelCall, following: ModelCall | None, decode: Decode | None
) -> dict[str, Any]:
    tools = _tool_calls(call)
    step: dict[str, Any] = {"step_id": step_id, "source": "agent"}
    stamp = _timestamp(call.started_at)
    if stamp is not None:
        step["timestamp"] = stamp
    if call.model_id or call.requested_model:
        step["model_name"] = call.model_id or call.requested_model
    step["message"] = call.text
    if call.reasoning:
        step["reasoning_content"] = call.reasoning
    if tools:
        step["tool_calls"] = tools
    observation = _observation(call, following, tools, decode)
    if observation is not None:
        step["observation"] = observation
    step["metrics"] = {
        "prompt_tokens": len(call.prompt_ids),
        "completion_tokens": len(call.output_ids),
        "prompt_token_ids": list(call.prompt_ids),
        "completion_token_ids": list(call.output_ids),
        "logprobs": list(call.output_logprobs),
    }
    step["llm_call_count"] = 1
    extra = {
        "call_id": call.call_id,
        "render": call.render,
        "finish_reason": call.finish_reason,
        "tags": list(call.tags),
        "weights_version": call.weights_version,
        "spliced_from": call.spliced_from,
        "replay_of": call.replay_of,
        "partial": call.partial or None,
    }
    step["extra"] = {k: v for k, v in extra.items() if v is not None}
    return step


def _agent(rollout: Rollout) -> dict[str, Any]:
    """ATIF's agent: the harness, its version as its requests named it (the first product token of
    the first call's user-agent: `claude-cli/2.1.332 (external, cli)` -> `2.1.332`; else "unknown")."""
    first = rollout.calls[0] if rollout.calls else None
    user_agent = first.headers.get("user-agent", "") if first is not None else ""
    product = user_agent.split(" ", 1)[0]
    version = product.split("/", 1)[1] if "/" in product and product.split("/", 1)[1] else "unknown"
    agent: dict[str, Any] = {"name": HarnessName.parse(rollout.harness).family, "version": version}
    if first is not None and (first.model_id or first.requested_model):
        agent["model_name"] = first.model_id or first.requested_model
    extra = {"configuration": rollout.harness if rollout.harness != agent["name"] else None}
    extra["user_agent"] = user_agent or None
    if any(v is not None for v in extra.values()):
        agent["extra"] = {k: v for k, v in extra.items() if v is not None}
    return agent


def trajectory(rollout: Rollout, decode: Decode | None = None) -> dict[str, Any]:
    """The ATIF v1.8 document of `rollout` (module docstring). `decode` turns token ids into text
    (the rollout's own tokenizer); without it texts the ids alone carry are left out."""
    calls = rollout.calls
    first = calls[0] if calls else None
    user = {"step_id": 1, "source": "user", "message": decode(first.prompt_ids) if decode and first else ""}
    steps: list[dict[str, Any]] = [user]
    for i, call in enumerate(calls):
        steps.append(_agent_step(i + 2, call, calls[i + 1] if i + 1 < len(calls) else None, decode))
    outcome = {
        "task_id": rollout.task_id,
        "group_id": rollout.group_id,
        "reward": rollout.reward,
        "status": rollout.status_label,
        "fault": rollout.fault or None,
        "status_reason": rollout.status_reason or None,
    }
    return {
        "schema_version": ATIF_VERSION,
        "session_id": rollout.rollout_id,
        "trajectory_id": rollout.rollout_id,
        "agent": _agent(rollout),
        "steps": steps,
        "final_metrics": {
            "total_prompt_tokens": sum(len(c.prompt_ids) for c in calls),
            "total_completion_tokens": sum(len(c.output_ids) for c in calls),
            "total_steps": len(steps),
        },
        "extra": {k: v for k, v in outcome.items() if v is not None},
    }


def write_trajectory(path: Path, doc: dict[str, Any]) -> None:
    """Write one ATIF document to `path` (UTF-8 JSON, replacing it)."""
    path.write_text(json.dumps(doc, indent=2, allow_nan=False) + "\n", encoding="utf-8")


def read_trajectory(path: Path) -> dict[str, Any]:
    """The JSON object of a `trajectory.json`; FormatError naming the file otherwise."""
    return read_json_object(path)
