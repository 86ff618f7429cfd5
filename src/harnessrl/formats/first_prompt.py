"""`<rollout>/prompt.json`: the digest of a rollout's first prompt (its harness's system prompt and
tools), which `rollout/prompt_check.py` compares across the rollouts of one run.

    {"harness": "hermes", "call_index": 0, "system_digest": "f7c5...", "tools_digest": "f5eb...",
     "tools": ["terminal", "read_file", ...], "prompt_tokens": 13653}

    write_first_prompt(rdir, prompt)   the runner's artifacts (only when the rollout made a call)
    read_first_prompt(rdir)            FirstPrompt, or FormatError naming the file and the field
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ValidationError

from harnessrl.formats import FormatError, read_json_object, write_json_object

PROMPT_FILE = "prompt.json"


class FirstPrompt(BaseModel):
    """What a harness sent in its first main-thread call of one rollout."""

    harness: str
    call_index: int
    """The call's arrival index in the rollout (the main thread's first: side calls come before it)."""
    system_digest: str
    """Digest of its system and developer messages (`proxy.capture.system_digest`)."""
    tools_digest: str
    """Digest of its tool set: names, descriptions, schemas (`proxy.capture.tools_digest`)."""
    tools: list[str]
    """The tool names, in the order offered."""
    prompt_tokens: int
    """Its prompt's length in tokens (the task's prompt included: informative, never compared)."""


def write_first_prompt(rdir: Path, prompt: FirstPrompt) -> Path:
    return write_json_object(rdir / PROMPT_FILE, prompt.model_dump(mode="json"))


def read_first_prompt(rdir: str | Path) -> FirstPrompt:
    path = Path(rdir) / PROMPT_FILE
    obj = read_json_object(path)
    try:
        return FirstPrompt.model_validate(obj)
    except ValidationError as e:
        first = e.errors()[0]
        raise FormatError(f"{path}: {'.'.join(str(x) for x in first['loc'])}: {first['msg']}") from None
