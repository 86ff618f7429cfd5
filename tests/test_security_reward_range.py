"""A checker that reads a number the agent controls pays whatever the agent wrote: the score is
refused outside `verify.reward_range` ([0, 1] by default). Shown with a real rollout: the shell harness
in a bubblewrap sandbox, the real proxy, the real checker in its own sandbox."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from pydantic import ValidationError

from harnessrl.config import SandboxConfig
from harnessrl.proxy.server import ProxyServer
from harnessrl.proxy.testing import scripted_deps
from harnessrl.rollout import RolloutJob, RolloutRunner, RunnerSettings
from harnessrl.rollout.testing import checked_task, curl_call
from harnessrl.types import Rollout, RolloutStatus
from harnessrl.verify.config import VerifyConfig
from harnessrl.verify.hybrid import in_range
from harnessrl.verify.result import CheckResult

pytestmark = pytest.mark.security

CHECK = """
import json, sys
def main():
    # the task's own design: the agent reports how many of the 10 tests it made pass
    passed = float(open(sys.argv[1] + "/passed.txt").read())
    print(json.dumps({"score": passed / 10}))
if __name__ == "__main__":
    main()
"""


async def rollout_writing(tmp_path: Path, passed: str, verify: VerifyConfig) -> Rollout:
    task = checked_task("t0", "make the tests pass and write how many did to passed.txt", CHECK,
                        source=str(tmp_path))  # fmt: skip
    settings = RunnerSettings(out_dir=tmp_path / "runs", timeout_s=30.0, sandbox=SandboxConfig(pool_size=0),
                              verify=verify)  # fmt: skip
    async with ProxyServer(scripted_deps(["ok"]), port=0) as server:
        runner = RolloutRunner(server.deps.sessions, ("127.0.0.1", server.port), settings)
        try:
            command = f"{curl_call()} && printf %s {passed} > passed.txt"
            return await runner.run(RolloutJob(task, "shell", "r0", options={"command": command}))
        finally:
            await runner.close()


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")
async def test_a_score_the_agent_inflated_is_refused(tmp_path: Path) -> None:
    """The agent writes 10 million passed tests: without the range that paid 1,000,000 (checked
    here with the range off), against at most 1 for an honest rollout. Now it scores 0, as the
    policy's failure, with the reason and the checker's metrics kept."""
    honest = await rollout_writing(tmp_path / "honest", "10", VerifyConfig())
    assert (honest.status, honest.reward) == (RolloutStatus.OK, 1.0)
    off = await rollout_writing(tmp_path / "off", "10000000", VerifyConfig(reward_range=None))
    assert off.reward == 1_000_000.0  # the hole, when the range is switched off
    attack = await rollout_writing(tmp_path / "attack", "10000000", VerifyConfig())
    assert attack.status is RolloutStatus.VERIFIER_ERROR and attack.reward == 0.0
    code = attack.reward_detail["code"]
    assert code["metrics"] == {"score": 1_000_000.0} and code["score"] == 0.0
    assert code["error"] == "score 1e+06 is outside verify.reward_range [0, 1]: refused, scored 0"
    assert "verify.reward_range" in attack.status_reason
    negative = await rollout_writing(tmp_path / "negative", "-5", VerifyConfig())
    assert (negative.status, negative.reward) == (RolloutStatus.VERIFIER_ERROR, 0.0)


def test_in_range_keeps_the_bounds_and_failed_checks() -> None:
    ok = CheckResult(score=1.0, metrics={"a": 1.0})
    zero = ok.model_copy(update={"score": 0.0})
    assert in_range(ok, (0.0, 1.0)) is ok and in_range(zero, (0.0, 1.0)) is zero
    failed = CheckResult(score=0.0, error="checker timed out after 1 s")
    assert in_range(failed, (0.5, 1.0)) is failed
    wide = CheckResult(score=7.0, metrics={"a": 7.0})
    assert in_range(wide, None) is wide and in_range(wide, (0.0, 10.0)) is wide
    refused = in_range(wide, (0.0, 1.0))
    assert (refused.score, refused.metrics) == (0.0, {"a": 7.0})


def test_a_range_upside_down_is_refused() -> None:
    with pytest.raises(ValidationError, match="reward_range"):
        VerifyConfig(reward_range=(1.0, 0.0))
