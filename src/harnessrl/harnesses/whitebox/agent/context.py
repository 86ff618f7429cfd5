"""Factor 4, context management: keep everything / sliding window / compaction by a summary call.

`prepare(history)` returns (the history to keep, the messages to send now). The window really drops
turns from the request (the system prompt and the task always stay); compaction, once the history is
past its budget, asks the model for a summary in a separate call and restarts from it.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from .client import Message

LEVELS = ("full", "window", "compaction")

COMPACT_PROMPT = (
    "Context compaction: the conversation is getting long. Summarize the conversation so far as a "
    "handoff note: the task, what you did, what you found, and what is left to do. Reply with the "
    "summary only, no action."
)
RESUME = (
    "Older turns were removed; your message above holds your notes on the earlier work. Continue the task."
)
"""Follows the model's own summary (kept as an assistant turn, so its recorded ids splice) in the
restart. It must not read as a summary request to the proxy's heuristic
(`proxy.capture.is_compaction_request`: no "summary" with "conversation" / "context" / "so far")."""


class Full:
    def prepare(self, history: list[Message]) -> tuple[list[Message], list[Message]]:
        return history, history


class Window:
    """System prompt + task + the last `turns` turns (a turn starts at an assistant message)."""

    def __init__(self, turns: int) -> None:
        self.turns = max(1, turns)

    def prepare(self, history: list[Message]) -> tuple[list[Message], list[Message]]:
        starts = [i for i, m in enumerate(history) if i >= 2 and m["role"] == "assistant"]
        if len(starts) <= self.turns:
            return history, history
        return history, history[:2] + history[starts[-self.turns] :]


class Compaction:
    """Past `budget_tokens` (estimated as JSON characters / 4): summary call, then restart from it:
    system prompt, task, the summary as the model's own turn, `RESUME`."""

    def __init__(self, budget_tokens: int, task: str, summarize: Callable[[list[Message]], str]) -> None:
        self.budget, self.task, self.summarize = budget_tokens, task, summarize
        self.head = 2
        """Messages at the start of the history that a compaction cannot remove."""

    def prepare(self, history: list[Message]) -> tuple[list[Message], list[Message]]:
        size = len(json.dumps(history)) // 4
        if size <= self.budget or len(history) <= self.head:  # nothing new since the (re)start
            return history, history
        summary = self.summarize([*history, {"role": "user", "content": COMPACT_PROMPT}]).strip()
        restart = [
            history[0],
            {"role": "user", "content": self.task},
            {"role": "assistant", "content": summary or "(no notes)"},
            {"role": "user", "content": RESUME},
        ]
        self.head = len(restart)
        return restart, restart
