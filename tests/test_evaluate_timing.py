"""Where a rollout's time goes (`evaluate.timing`): a hand-computed split, and the same read back from
rollout folders as the runner writes them."""

from __future__ import annotations

from pathlib import Path

from harnessrl.evaluate.timing import folder_times, rollout_times, times_markdown
from harnessrl.formats.rollout_dir import write_rollout
from harnessrl.types import ModelCall, Rollout, RolloutStatus


def call(start: float, end: float, prompt: int, out: int) -> ModelCall:
    return ModelCall(call_id=f"c{start}", rollout_id="r", index=0, dialect="anthropic", started_at=start,
                     finished_at=end, prompt_ids=list(range(prompt)), output_ids=list(range(out)),
                     output_logprobs=[0.0] * out)  # fmt: skip


def rollout(rid: str, harness: str, calls: list[ModelCall], agent: float = 9.0) -> Rollout:
    # started 100.0; agent phase 9 s, checker 0.5 s, the rest (0.5 s) the runner's own
    return Rollout(rollout_id=rid, task_id="t", harness=harness, status=RolloutStatus.OK, calls=calls,
                   started_at=100.0, ended_at=110.0, timings={"agent": agent, "verify": 0.5})  # fmt: skip


def test_the_split_against_a_hand_computed_case(tmp_path: Path) -> None:
    # first request at +3 s (start-up); two calls of 2 s and 1 s (model); 9 - 3 - 3 = 3 s harness
    a = rollout("a", "claude-code", [call(103.0, 105.0, 1200, 30), call(106.0, 107.0, 1300, 10)])
    b = rollout("b", "claude-code", [], agent=4.0)  # no call: all start-up; other = 10 - 4 - 0.5
    times = rollout_times([a, b])
    assert times == {
        "claude-code": {
            "startup": (3.0 + 4.0) / 2,
            "model": 1.5,
            "harness": 1.5,
            "verify": 0.5,
            "other": (0.5 + 5.5) / 2,
            "total": 10.0,
            "calls": 1.0,
            "prompt_tokens": 1250.0,
            "output_tokens": 20.0,
            "rollouts": 2,
        }
    }
    for r in (a, b):
        (tmp_path / "rollouts" / r.rollout_id).mkdir(parents=True)
        write_rollout(tmp_path / "rollouts" / r.rollout_id, r)
    (tmp_path / "rollouts" / "broken").mkdir()
    (tmp_path / "rollouts" / "broken" / "rollout.json").write_text("{not json")
    assert folder_times(tmp_path) == times
    table = times_markdown(times)
    assert "| claude-code | 2 | 10.00 | 3.50 | 1.50 | 1.50 | 0.50 | 3.00 | 1.0 | 1250 | 20.0 |" in table


def test_stamps_out_of_order_never_give_negative_parts() -> None:
    r = rollout("c", "w", [call(99.0, 130.0, 5, 5)], agent=2.0)  # a call longer than the agent phase
    t = rollout_times([r])["w"]
    assert all(t[p] >= 0 for p in ("startup", "model", "harness", "verify", "other"))
    assert t["startup"] + t["model"] + t["harness"] == 2.0
