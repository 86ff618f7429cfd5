"""Step 6 of a rollout: the task's checker (and judge) on the final workspace, in their own sandbox.

They read the policy's workspace: whatever breaks them (garbage can make a checker raise, hang or
die) is its failure (reward 0, `status.untrusted_failure`); only a verdict that could not be had at
all (a `VerifierError`: an unreachable judge, a checker sandbox that could not be made) is the
infrastructure's, and a `TaskError` (the task itself is broken) is left to the caller.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harnessrl.rollout.environment import task_system
from harnessrl.rollout.status import Failure, Happened, untrusted_failure
from harnessrl.types import ModelCall, Rollout, RolloutStatus, Task, TaskError, VerifierError
from harnessrl.verify import RubricJudge, score_task
from harnessrl.verify.command_runner import CommandRunner
from harnessrl.verify.config import VerifyConfig


@dataclass(frozen=True)
class Scoring:
    """How a runner scores: its verifier settings, judge, checker runner and agent environment."""

    verify: VerifyConfig
    judge: RubricJudge | None
    checker_runner: Callable[[], CommandRunner | None]
    """Makes the runner the checker runs its commands on (None: a local process)."""
    agent_env: Path | None

    async def score(self, task: Task, rollout: Rollout, happened: Happened) -> None:
        """Score the rollout's final workspace: `rollout.reward` and its detail, and in
        `happened.scoring` the failure the verdict shows, if any."""
        t0 = time.perf_counter()
        try:
            happened.scoring = await self._verdict(task, rollout)
        except TaskError:
            raise
        except Exception as e:
            happened.scoring = untrusted_failure(rollout, RolloutStatus.VERIFIER_ERROR, "scoring", e)
        rollout.timings["verify"] = round(time.perf_counter() - t0, 3)

    async def _verdict(self, task: Task, rollout: Rollout) -> Failure | None:
        changes, root = task_system(task).scoring(Path(rollout.workdir), self.agent_env)
        try:
            score = await score_task(
                task,
                changes,
                self.verify,
                judge=self.judge,
                transcript=transcript(rollout.calls),
                runner=self.checker_runner(),
                root=root,
            )
        except VerifierError as e:
            rollout.reward = 0.0
            return Failure(RolloutStatus.VERIFIER_ERROR, str(e))
        rollout.reward = score.reward
        rollout.reward_detail.update(score.detail)
        code = score.detail.get("code") or {}
        if code.get("error"):  # the checker failed on the workspace
            return Failure(RolloutStatus.VERIFIER_ERROR, f"checker: {code['error']}", policy=True)
        return None


def transcript(calls: list[ModelCall]) -> list[dict[str, Any]]:
    """What ClawGym checkers get as `transcript`: the assistant turns, in order."""
    return [
        {"role": "assistant", "content": c.text, "tool_calls": [t.model_dump() for t in c.tool_calls]}
        for c in calls
    ]
