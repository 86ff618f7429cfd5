"""Rubric parsing: ClawGym `rules` / `rule` values and PinchBench `## LLM Judge Rubric` sections.

ClawGym rules are already structured (`{name, file_path, scores: {"0": ..., "1": ...}}`); a bare
string rule becomes one binary rule. PinchBench rubrics are prose, so we define a small parse:

1. `### Criterion N: Title (Weight: W%)` headings, each followed by `**Score X**: meaning` lines,
   become one rule per heading with those levels (the weight is kept in the description only: the
   judge reports an equal-weight mean, as ClawGym does).
2. Otherwise each bullet (`-`, `*`, `- [ ]`) or numbered (`1.`) item becomes a binary rule (0 / 1).
3. Otherwise non-empty text becomes one binary rule whose description is the whole text.

Rules parsed from markdown have no `file_path`: the judge then sees a digest of the workspace.
"""

from __future__ import annotations

import re
from typing import Any

from harnessrl.types import RubricRule, TaskError

BINARY_LEVELS = {"0": "the criterion is not met", "1": "the criterion is met"}

_CRITERION = re.compile(r"^#{2,4}\s*(?:Criterion\s*\d*\s*[:.-]?\s*)?(?P<title>.+?)\s*$", re.IGNORECASE)
_LEVEL = re.compile(r"^\s*[-*]?\s*\*\*\s*Score\s+(?P<level>\d+(?:\.\d+)?)\s*\*\*[^:：]*[:：]\s*(?P<text>.*)$")
_WEIGHT = re.compile(r"\(\s*weight[^)]*\)", re.IGNORECASE)
_ITEM = re.compile(r"^\s*(?:[-*+]\s+(?:\[[ xX]\]\s*)?|\d+[.)]\s+)(?P<text>\S.*)$")


def _slug(text: str, fallback: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")
    return slug[:60] or fallback


def _normalise_levels(scores: Any, where: str, line: int | None) -> dict[str, str]:
    if scores is None:
        return dict(BINARY_LEVELS)
    if not isinstance(scores, dict) or not scores:
        raise TaskError("rubric `scores` must be a non-empty object of level -> meaning", where, line)
    levels: dict[str, str] = {}
    for key, meaning in scores.items():
        try:
            float(key)
        except ValueError:
            raise TaskError(f"rubric level {key!r} is not a number", where, line) from None
        levels[str(key)] = str(meaning)
    return levels


def unique_names(rules: list[RubricRule]) -> list[RubricRule]:
    """Suffix repeated rule names (`x`, `x_2`, ...) so that per-rule scores never collide."""
    seen: dict[str, int] = {}
    out: list[RubricRule] = []
    for rule in rules:
        count = seen.get(rule.name, 0) + 1
        seen[rule.name] = count
        out.append(rule if count == 1 else rule.model_copy(update={"name": f"{rule.name}_{count}"}))
    return out


def rules_from_clawgym(value: Any, where: str, line: int | None = None) -> list[RubricRule]:
    """ClawGym `rules` (list of objects), `rule` (object, list or string) -> rubric rules."""
    if value is None or value == "" or value == []:
        return []
    items = value if isinstance(value, list) else [value]
    rules: list[RubricRule] = []
    for i, item in enumerate(items):
        if isinstance(item, str):
            rules.append(RubricRule(name=f"rule_{i}", description=item, scores=dict(BINARY_LEVELS)))
            continue
        if not isinstance(item, dict):
            raise TaskError(f"rubric rule #{i} must be an object or a string", where, line)
        description = item.get("description") or item.get("rule") or item.get("criteria") or ""
        rules.append(
            RubricRule(
                name=str(item.get("name") or f"rule_{i}"),
                file_path=item.get("file_path") or None,
                description=str(description),
                scores=_normalise_levels(item.get("scores"), where, line),
            )
        )
    return unique_names(rules)


def _criteria_rules(lines: list[str]) -> list[RubricRule]:
    rules: list[RubricRule] = []
    title: str | None = None
    body: list[str] = []
    levels: dict[str, str] = {}

    def flush() -> None:
        if title is not None and levels:
            name = _slug(_WEIGHT.sub("", title), f"criterion_{len(rules) + 1}")
            text = "\n".join(b for b in body if b.strip()).strip()
            rules.append(RubricRule(name=name, description=f"{title}\n{text}".strip(), scores=dict(levels)))

    for raw in lines:
        heading = _CRITERION.match(raw) if raw.lstrip().startswith("#") else None
        if heading:
            flush()
            title, body, levels = heading.group("title"), [], {}
            continue
        level = _LEVEL.match(raw)
        if level and title is not None:
            levels[level.group("level")] = level.group("text").strip()
        elif title is not None:
            body.append(raw)
    flush()
    return rules


def rules_from_markdown(text: str) -> list[RubricRule]:
    """Parse a PinchBench `## LLM Judge Rubric` section body (see the module docstring)."""
    lines = text.splitlines()
    rules = _criteria_rules(lines)
    if rules:
        return unique_names(rules)
    items = [m.group("text").strip() for m in map(_ITEM.match, lines) if m]
    if items:
        return unique_names(
            [
                RubricRule(name=_slug(item, f"item_{i + 1}"), description=item, scores=dict(BINARY_LEVELS))
                for i, item in enumerate(items)
            ]
        )
    body = text.strip()
    if body:
        return [RubricRule(name="rubric", description=body, scores=dict(BINARY_LEVELS))]
    return []
