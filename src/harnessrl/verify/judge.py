"""Rubric judge: each rule is scored by an LLM behind any OpenAI-compatible `/chat/completions`.

For a rule with a `file_path`, the judge reads that workspace file (missing or escaping the workspace:
score 0 with the reason). A rule without one (PinchBench rubrics) is shown a digest of the workspace:
the file list and the text of the first files, capped at `EVIDENCE_CHARS`. The agent's transcript is
not shown (harness transcripts are not normalised yet); that is a known gap for transcript rubrics.

The answer must name one of the rule's levels. Accepted forms, tried in order: a JSON object with a
`score` key anywhere in the reply (the last one wins), a reply that is a bare number, or prose that
mentions exactly one distinct level value. Anything else (or an HTTP failure) is retried up to
`max_retries` times. A judge that answered but never with a level scores the rule 0 with the reason
in `errors`, and so does one that refused the request for its content (HTTP 400, 413, 422: the
evidence is the agent's files, so a refusal must not be a way out of a score); a judge that could not
be reached on any attempt raises VerifierError (the rollout ends `verifier_error`, never trained: an
outage says nothing about the policy's work). `mean` is the
equal-weight mean over all rules (0.0 for a task without rules).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from pathlib import Path
from typing import Any

import httpx
from pydantic import BaseModel, Field

from harnessrl.tasks.rubric import BINARY_LEVELS
from harnessrl.types import RubricRule, Task, VerifierError, safe_relpath
from harnessrl.verify.config import JudgeConfig

EVIDENCE_CHARS = 30_000
DIGEST_FILES = 200
_JSON_OBJECT = re.compile(r"\{[^{}]*\}")
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w.])")

SYSTEM_PROMPT = (
    "You grade the result of a task against one rubric rule. Read the evidence, pick exactly one of "
    'the allowed score levels, and answer with a JSON object: {"score": <level>, "reason": "<short>"}.'
)


class JudgeResult(BaseModel):
    """Per-rule scores of one task, their mean, and why any rule fell back to 0."""

    per_rule: dict[str, float] = Field(default_factory=dict)
    mean: float = 0.0
    errors: dict[str, str] = Field(default_factory=dict)
    """rule name -> reason it scored 0 without a judgement (missing file, unparsable answers)."""


def rule_levels(rule: RubricRule) -> dict[float, str]:
    """The rule's allowed levels as numbers (a rule without levels is binary)."""
    return {float(k): v for k, v in (rule.scores or BINARY_LEVELS).items()}


def parse_score(text: str, levels: list[float]) -> float | None:
    """The level named by a judge reply, or None (see the module docstring for the accepted forms)."""
    found: float | None = None
    for m in _JSON_OBJECT.finditer(text):
        try:
            obj = json.loads(m.group(0))
            value = float(obj["score"]) if isinstance(obj, dict) and "score" in obj else None
        except (json.JSONDecodeError, TypeError, ValueError):
            continue
        if value is not None:
            found = value
    if found is None:
        try:
            found = float(text.strip())
        except ValueError:
            mentioned = {float(n) for n in _NUMBER.findall(text)} & set(levels)
            found = mentioned.pop() if len(mentioned) == 1 else None
    return found if found is not None and found in levels else None


def _read_text(path: Path, limit: int) -> str:
    with path.open("rb") as fh:
        return fh.read(limit).decode("utf-8", errors="replace")


def _is_binary(path: Path) -> bool:
    with path.open("rb") as fh:
        return b"\x00" in fh.read(4096)


def _shown(path: Path, root: Path) -> str:
    """A workspace path as text the judge request can carry: bytes that are not UTF-8 (the agent
    names its files) are shown as escapes, not left as surrogates that no encoder takes."""
    name = path.relative_to(root).as_posix()
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def workspace_digest(workspace: Path, limit: int = EVIDENCE_CHARS) -> str:
    """File list plus the text of the first files (binary files listed only), at most `limit` chars."""
    files = sorted(p for p in workspace.rglob("*") if p.is_file() and not p.is_symlink())[:DIGEST_FILES]
    parts = ["Files in the workspace:", *(f"- {_shown(p, workspace)}" for p in files)]
    budget = limit - sum(len(p) + 1 for p in parts)
    for p in files:
        if budget <= 0:
            break
        if _is_binary(p):
            continue
        body = _read_text(p, budget)
        parts.append(f"\n=== {_shown(p, workspace)} ===\n{body}")
        budget -= len(body) + 10
    return "\n".join(parts)[:limit]


def evidence_for(rule: RubricRule, workspace: Path) -> tuple[str | None, str | None]:
    """-> (evidence text, None) or (None, reason the rule scores 0 without asking the judge)."""
    if rule.file_path is None:
        return workspace_digest(workspace), None
    try:
        target = (workspace / safe_relpath(rule.file_path)).resolve()
    except ValueError as e:
        return None, str(e)
    if not target.is_relative_to(workspace.resolve()) or not target.is_file():
        return None, f"file {rule.file_path!r} is missing"
    return f"Content of {rule.file_path}:\n{_read_text(target, EVIDENCE_CHARS)}", None


def judge_messages(task: Task, rule: RubricRule, evidence: str) -> list[dict[str, str]]:
    """The chat messages sent for one rule."""
    levels = "\n".join(f"- {k:g}: {v}" for k, v in sorted(rule_levels(rule).items()))
    user = (
        f"Task given to the agent:\n{task.prompt}\n\nRubric rule `{rule.name}`: {rule.description}\n\n"
        f"Allowed score levels:\n{levels}\n\nEvidence:\n{evidence}\n\n"
        'Answer with {"score": <one of the allowed levels>, "reason": "..."}.'
    )
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


CONTENT_REFUSALS = frozenset({400, 413, 422})
"""HTTP statuses that refuse a judge request for what it carries (the evidence): the rule scores 0."""


class RubricJudge:
    """Scores a task's rubric over an OpenAI-compatible endpoint (`JudgeConfig`)."""

    def __init__(self, config: JudgeConfig, client: httpx.AsyncClient | None = None) -> None:
        self.config = config
        key = os.environ.get(config.api_key_env)
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._client = client or httpx.AsyncClient(timeout=config.timeout_s, headers=headers)

    async def aclose(self) -> None:
        await self._client.aclose()

    async def _ask(self, messages: list[dict[str, str]]) -> str:
        url = self.config.base_url.rstrip("/") + "/chat/completions"
        body: dict[str, Any] = {"model": self.config.model, "messages": messages, "temperature": 0.0}
        resp = await self._client.post(url, json=body)
        resp.raise_for_status()
        return str(resp.json()["choices"][0]["message"]["content"] or "")

    async def score_rule(self, task: Task, rule: RubricRule, workspace: Path) -> tuple[float, str | None]:
        """-> (score, None) or (0.0, reason). Retries unparsable answers and HTTP failures."""
        try:
            levels = sorted(rule_levels(rule))
        except ValueError:
            return 0.0, f"rule levels {sorted(rule.scores)} are not all numbers"
        evidence, reason = evidence_for(rule, workspace)
        if evidence is None:
            return 0.0, reason
        messages = judge_messages(task, rule, evidence)
        last, answered = "", False
        attempts = self.config.max_retries + 1
        for _ in range(attempts):
            try:
                reply = await self._ask(messages)
            except httpx.HTTPStatusError as e:
                last = f"judge request failed: HTTP {e.response.status_code}: {e.response.text[:200]!r}"
                if e.response.status_code in CONTENT_REFUSALS:
                    return 0.0, last
                continue
            except UnicodeError as e:  # the request could not be built from the agent's files
                return 0.0, f"judge request could not be made from the workspace: {e}"
            except (httpx.HTTPError, KeyError, IndexError, TypeError, ValueError) as e:
                last = f"judge request failed: {type(e).__name__}: {e}"
                continue
            answered = True
            value = parse_score(reply, levels)
            if value is not None:
                return value, None
            last = f"unparsable judge answer: {reply[:200]!r}"
        if not answered:
            raise VerifierError(
                f"rubric judge at {self.config.base_url} (verify.judge) gave no answer for rule "
                f"{rule.name!r} of task {task.id!r}: {last} (after {attempts} attempts)"
            )
        return 0.0, f"{last} (after {attempts} attempts)"

    async def score(self, task: Task, workspace: Path) -> JudgeResult:
        """Judge every rule of the task (concurrently) on the final workspace."""
        outcomes = await asyncio.gather(*(self.score_rule(task, r, workspace) for r in task.rubric))
        result = JudgeResult()
        for rule, (value, reason) in zip(task.rubric, outcomes, strict=True):
            result.per_rule[rule.name] = value
            if reason is not None:
                result.errors[rule.name] = reason
        result.mean = sum(result.per_rule.values()) / len(result.per_rule) if result.per_rule else 0.0
        return result
