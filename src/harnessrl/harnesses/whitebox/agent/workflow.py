"""Factor 5, the workflow: free ReAct loop / plan first, then act / act, then self-verify (retry once).

A workflow adds to the opening message (`opening`), decides what a final answer leads to
(`on_final`: a follow-up user message, or None to stop) and watches action outcomes (`observed`).
"""

from __future__ import annotations

from .observe import CommandOutcome

LEVELS = ("react", "plan", "verify")

PLAN_PROMPT = "First reply with a short numbered plan only; do not run anything yet."
PLAN_GO = "Now carry out your plan, one action per reply."
VERIFY_PROMPT = (
    "Before you finish, verify your work: run one command that checks the result "
    "(it must exit 0 when the result is right)."
)
RETRY_PROMPT = "The check failed (exit code {code}). Fix the problem, then give your final answer."


class React:
    opening = ""

    def on_final(self) -> str | None:
        return None

    def observed(self, outcome: CommandOutcome) -> None:
        return None


class Plan(React):
    opening = "\n\n" + PLAN_PROMPT

    def __init__(self) -> None:
        self.planned = False

    def on_final(self) -> str | None:
        if self.planned:
            return None
        self.planned = True
        return PLAN_GO


class Verify(React):
    def __init__(self) -> None:
        self.phase = "act"  # act -> verifying -> (retried) -> done
        self.last_code: int | None = None

    def observed(self, outcome: CommandOutcome) -> None:
        if self.phase == "verifying":
            self.last_code = outcome.exit_code

    def on_final(self) -> str | None:
        if self.phase == "act":
            self.phase = "verifying"
            return VERIFY_PROMPT
        if self.phase == "verifying" and self.last_code not in (None, 0):
            self.phase = "retried"
            return RETRY_PROMPT.format(code=self.last_code)
        return None


def workflow(level: str) -> React:
    return {"react": React, "plan": Plan, "verify": Verify}[level]()
