"""Verifiers: code checkers (ClawGym semantics), the rubric judge, and hybrid scoring.

check = run_checker(task, workspace)                 # CheckResult(score, metrics, error, ...)
judged = await RubricJudge(cfg.judge).score(task, workspace)
score = await score_task(task, workspace, cfg, judge)  # Score(reward, detail)
"""

from harnessrl.verify.checker import CheckResult, run_checker
from harnessrl.verify.command_runner import CommandRunner, LocalRunner, RunOutput
from harnessrl.verify.hybrid import Score, score_task
from harnessrl.verify.judge import JudgeResult, RubricJudge

__all__ = [
    "CheckResult",
    "CommandRunner",
    "JudgeResult",
    "LocalRunner",
    "RubricJudge",
    "RunOutput",
    "Score",
    "run_checker",
    "score_task",
]
