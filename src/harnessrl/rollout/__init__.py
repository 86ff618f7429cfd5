"""Rollouts: run tasks through harnesses in sandboxes against the proxy; write one folder per rollout."""

from harnessrl.formats.rollout_summary import summarize
from harnessrl.rollout.artifacts import read_rollout
from harnessrl.rollout.runner import RolloutJob, RolloutRunner, RunnerSettings

__all__ = ["RolloutJob", "RolloutRunner", "RunnerSettings", "read_rollout", "summarize"]
