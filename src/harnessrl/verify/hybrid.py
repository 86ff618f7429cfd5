"""One reward per task: `score_task` combines the code checker and the rubric judge by grading type.

- automated: reward = code score;
- llm_judge: reward = rubric mean;
- hybrid:    reward = w_code * code + w_rubric * rubric, with the weights from `VerifyConfig`
  (`code_weight`, `rubric_weight`) unless the task sets `grading_weights` {"automated", "llm_judge"}.
  The weights are used as given, not renormalised.

The checker's time limit is `cfg.checker_timeout_s` unless the task's Checker sets `timeout_s` itself.
The checker runs in a worker thread (it blocks on a subprocess) while the event loop stays free.
"""

from __future__ import annotations

import asyncio
import functools
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from harnessrl.types import Task, VerifierError
from harnessrl.verify.checker import run_checker
from harnessrl.verify.command_runner import CommandRunner
from harnessrl.verify.config import VerifyConfig
from harnessrl.verify.harbor_roots import VerifierRoot
from harnessrl.verify.judge import RubricJudge
from harnessrl.verify.result import CheckResult


class Score(BaseModel):
    """The reward of one final workspace and everything that went into it."""

    reward: float
    detail: dict[str, Any] = Field(default_factory=dict)
    """grading_type, weights, `code` (CheckResult dump) and/or `rubric` (JudgeResult dump)."""


def in_range(check: CheckResult, reward_range: tuple[float, float] | None) -> CheckResult:
    """`check`, or, when its score is outside `verify.reward_range`, a failed check scoring 0 that
    says so (its metrics kept for the record)."""
    if reward_range is None or check.error is not None:
        return check
    low, high = reward_range
    if low <= check.score <= high:
        return check
    reason = f"score {check.score:g} is outside verify.reward_range [{low:g}, {high:g}]: refused, scored 0"
    return check.model_copy(update={"score": 0.0, "error": reason})


def hybrid_weights(task: Task, cfg: VerifyConfig) -> tuple[float, float]:
    """(code weight, rubric weight): the task's `grading_weights` override the config's."""
    w = task.grading_weights
    return float(w.get("automated", cfg.code_weight)), float(w.get("llm_judge", cfg.rubric_weight))


async def score_task(
    task: Task,
    workspace: Path,
    cfg: VerifyConfig,
    judge: RubricJudge | None = None,
    transcript: list[Any] | None = None,
    runner: CommandRunner | None = None,
    root: VerifierRoot | None = None,
) -> Score:
    """Score a final workspace. Checker and judge failures are data (0 + reason in `detail`).

    Raises VerifierError when the task needs a judge and none is given, or needs a checker it lacks.
    `root`: the system a Harbor verifier runs on (`run_checker`); `workspace` is then what it takes.
    """
    kind = task.grading_type
    detail: dict[str, Any] = {"grading_type": kind}
    code = rubric = 0.0
    if kind in ("automated", "hybrid"):
        timeout = cfg.checker_timeout_s
        if task.checker is not None and "timeout_s" in task.checker.model_fields_set:
            timeout = task.checker.timeout_s  # the task set its own limit
        check = await asyncio.to_thread(
            functools.partial(run_checker, allow_network=cfg.allow_verifier_network, root=root),
            task,
            workspace,
            transcript,
            timeout,
            runner,
        )
        check = in_range(check, cfg.reward_range)
        code = check.score
        detail["code"] = check.model_dump()
    if kind in ("llm_judge", "hybrid"):
        if judge is None:
            raise VerifierError(f"task {task.id!r} is graded by {kind} but no judge was given")
        judged = await judge.score(task, workspace)
        rubric = judged.mean
        detail["rubric"] = judged.model_dump()
    if kind == "automated":
        return Score(reward=code, detail=detail)
    if kind == "llm_judge":
        return Score(reward=rubric, detail=detail)
    w_code, w_rubric = hybrid_weights(task, cfg)
    detail["weights"] = {"automated": w_code, "llm_judge": w_rubric}
    return Score(reward=w_code * code + w_rubric * rubric, detail=detail)
