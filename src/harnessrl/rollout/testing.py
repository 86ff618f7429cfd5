"""What the tests and benchmarks of scripted rollouts share: shell command lines that call the model
with curl (the `shell` harness's command is the "agent"), and tasks whose checker scores a file the
command wrote.

    command = f"{curl_call(max_tokens=8)} && {SCORE_FROM_KEY}"     # one call, then its own score
    tasks = [checked_task(f"t{i}", "write a score") for i in range(2)]   # scored by `SCORE_CHECK`

Nothing here runs anything: the strings are run by the shell harness in a sandbox, whose environment
names the rollout's endpoint and key (`HARNESSRL_BASE_URL`, `HARNESSRL_API_KEY`) and its prompt
(`HARNESSRL_PROMPT`).
"""

from __future__ import annotations

import json
from typing import Any

from harnessrl.types import Checker, Task, TaskFile


def curl_call(content: str = "say hi", *, max_tokens: int | None = None, out: str = "reply.json") -> str:
    """A shell command line: one chat completion with the user message `content` (at most
    `max_tokens`; None: the engine's default) through the rollout's endpoint, the reply in `out`."""
    body: dict[str, Any] = {"model": "m"}
    if max_tokens is not None:
        body["max_tokens"] = max_tokens
    body["messages"] = [{"role": "user", "content": content}]
    return (
        'curl -sf -X POST "$HARNESSRL_BASE_URL/v1/chat/completions" -H "content-type: application/json" '
        f"-H \"authorization: Bearer $HARNESSRL_API_KEY\" -d '{json.dumps(body)}' > {out}"
    )


SCORE_FROM_KEY = 'printf %s "$HARNESSRL_API_KEY" | md5sum > score.txt'
"""Writes score.txt from the rollout's key: every rollout its own score under `SCORE_CHECK`, so a group
has reward variance."""

SCORE_CHECK = """
import json, sys
from pathlib import Path
def grade(transcript, workspace_path):
    p = Path(workspace_path) / "score.txt"
    if not p.is_file():
        return {"score": 0.0}
    return {"score": int(p.read_text().split()[0][:8], 16) / 0xFFFFFFFF}
if __name__ == "__main__":
    print(json.dumps(grade([], sys.argv[1])))
"""
"""A ClawGym checker: the first 8 hex digits of score.txt over 0xFFFFFFFF (0.0 when there is none)."""


def checked_task(task_id: str, prompt: str, check: str = SCORE_CHECK, **fields: Any) -> Task:
    """A task with a one-file workspace (README.md) scored by the checker `check` (`reward/check.py`);
    `fields`: any other `Task` fields."""
    return Task(
        id=task_id,
        prompt=prompt,
        workspace=[TaskFile(path="README.md", content="task\n")],
        checker=Checker(files=[TaskFile(path="reward/check.py", content=check)]),
        **fields,
    )
