"""`harnessrl eval` scores a task as the task defines it: a rubric judge (any OpenAI-compatible
endpoint in `verify.judge`; here a scripted judge server on a real port) and the hybrid weighting,
through a real sandboxed whitebox rollout with the scripted engine replaying each task's reference."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from test_verify_judge import FakeJudge, judge_server, rule  # noqa: F401  (judge_server: a fixture)

from harnessrl.config import Config, JudgeConfig
from harnessrl.evaluate import Policy, evaluate
from harnessrl.train.sft import demo_engine
from harnessrl.types import Checker, Task, TaskFile

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")

WRITE_REPORT = "printf '# Report\\nTotal: 42\\n' > report.md"
CODE_HALF = "def grade(t, w):\n    return {'a': 1.0, 'b': 0.0}\n"


def task(tid: str, kind: str, rules: list[str], weights: dict[str, float] | None = None) -> Task:
    return Task(
        id=tid,
        prompt=f"Write report.md ({tid}).",
        category="writing",
        grading_type=kind,  # type: ignore[arg-type]
        checker=Checker(files=[TaskFile(path="reward/check.py", content=CODE_HALF)])
        if kind == "hybrid"
        else None,
        rubric=[rule(r) for r in rules],
        grading_weights=weights or {},
        reference=TaskFile(path="reference/solve.sh", content=WRITE_REPORT + "\n"),
    )


async def eval_judged(
    tasks: list[Task], out: Path, judge: JudgeConfig, threshold: float = 1.0
) -> dict[str, Any]:
    """One whitebox run of each task by the scripted engine (its reference), judged by `judge`."""
    cfg = Config()
    cfg.engine.type, cfg.engine.model = "scripted", "tiny-qwen3"
    cfg.eval.runs, cfg.eval.out_dir, cfg.eval.pass_threshold = 1, str(out), threshold
    cfg.verify.judge = judge
    harness = "whitebox:00000"
    return await evaluate(
        cfg, tasks, harnesses=[harness], policies=[Policy("p", "tiny-qwen3")],
        engine=demo_engine(cfg, tasks, harness), echo=lambda _: None,
    )  # fmt: skip


async def test_eval_rubric_and_hybrid_scores(judge_server: tuple[FakeJudge, str], tmp_path: Path) -> None:  # noqa: F811
    fake, url = judge_server
    tasks = [
        task("judged", "llm_judge", ["good", "bare"]),  # mean of 1 and 0.25
        task("hybrid", "hybrid", ["good"], {"automated": 0.5, "llm_judge": 0.5}),  # 0.5*0.5 + 0.5*1
    ]
    report = await eval_judged(
        tasks, tmp_path, JudgeConfig(base_url=url, model="judge-x", max_retries=1), 0.7
    )
    by_task = report["policies"]["p"]["by_task"]
    assert by_task["judged"]["mean_score"] == pytest.approx(0.625)
    assert by_task["hybrid"]["mean_score"] == pytest.approx(0.75)
    assert (by_task["judged"]["pass1"], by_task["hybrid"]["pass1"]) == (0.0, 1.0)  # threshold 0.7
    # the judge read the workspace the agent wrote, through the real rollout
    assert fake.count("good") == 2 and fake.count("bare") == 1
    assert all("Total: 42" in b["messages"][1]["content"] for b in fake.requests)
    assert report["policies"]["p"]["summary"]["statuses"] == {"ok": 2}


async def test_eval_without_a_judge_endpoint_is_a_verifier_error(tmp_path: Path) -> None:
    tasks = [task("judged", "llm_judge", ["good"])]
    unreachable = JudgeConfig(base_url="http://127.0.0.1:9/v1", model="judge-x", max_retries=0)
    report = await eval_judged(tasks, tmp_path, unreachable)
    s = report["policies"]["p"]["summary"]
    # an unreachable judge is not the policy's fault: counted by status, scored 0, kept in the denominator
    assert s["rollouts"] == 1 and s["pass1"] == 0.0 and s["statuses"] == {"verifier_error": 1}
    (o,) = report["outcomes"]
    assert o["status"] == "verifier_error" and o["score"] == 0.0 and not o["passed"]
