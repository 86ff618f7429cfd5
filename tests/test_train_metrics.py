"""Step metrics: the `outcomes` section and flat scalars from hand-made rollouts (numbers computed by
hand), the JSONL + TensorBoard sink (read back by our reader and, where installed, by TensorBoard's),
and the progress display's lines and ETAs on a fake clock."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from harnessrl.progress import Progress
from harnessrl.report.tbevents import crc32c, read_scalars
from harnessrl.train.metrics import MetricsSink, outcomes, scalars
from harnessrl.types import ModelCall, Rollout, RolloutStatus


def call(prompt: int, output: int) -> ModelCall:
    return ModelCall(call_id="c", rollout_id="r", index=0, dialect="x", prompt_ids=[1] * prompt,
                     output_ids=[2] * output, output_logprobs=[0.0] * output)  # fmt: skip


def rollout(task: str, harness: str, reward: float | None, status: str = "ok", **kw: Any) -> Rollout:
    return Rollout(
        rollout_id=f"{task}-{harness}-{reward}", task_id=task, harness=harness, group_id=f"{task}/{harness}",
        reward=reward, status=RolloutStatus(status), **kw,
    )  # fmt: skip


ROLLOUTS = [
    rollout(
        "t0", "whitebox:01220", 1.0, calls=[call(10, 2), call(14, 4)], timings={"agent": 3.0, "verify": 1.0}
    ),
    rollout("t0", "whitebox:01220", 0.0, calls=[call(10, 6)], timings={"agent": 2.0, "verify": 1.0}),
    rollout("t1", "whitebox:00000", 0.5, calls=[call(8, 0)], timings={"agent": 1.0, "verify": 0.5}),
    rollout("t1", "codex", 1.0, timings={"agent": 1.0, "verify": 0.5}),
    rollout("t1", "codex", None, status="timeout", calls=[call(20, 8)], timings={"agent": 2.0}),
]
RECORD: dict[str, Any] = {
    "step": 3,
    "reward": {"n": 4, "mean": 0.625, "std": 0.41457809879442492},
    "groups": {"scheduled": 3, "trained": 3, "zero_variance": 1},
    "status": {"ok": 4, "timeout": 1},
    "tree": {"tokens_per_call": 60, "tokens_unique": 40},
    "trainer": {"trained_tokens": 12, "entropy": 1.5, "mismatch/frac_truncated": 0.25, "grad_norm": 0.5},
    "time": {"rollouts": 10.0, "trees": 0.5, "train": 2.0, "step": 13.0},
}


def test_outcomes_by_hand() -> None:
    got = outcomes(ROLLOUTS)
    assert got["passed"] == 2 and got["pass_rate"] == 2 / 5  # the timeout counts in the denominator
    assert got["reward_by_kind"] == {
        "codex": {"n": 1, "mean": 1.0, "std": 0.0},
        "whitebox": {"n": 3, "mean": 0.5, "std": pytest.approx(0.408248290463863)},
    }
    assert got["group_reward_std"] == 0.5  # only t0/whitebox:01220 has two ok rollouts: std(1, 0)
    assert (got["calls"], got["tokens_sampled"], got["tokens_per_call_mean"]) == (5, 20, 82 / 5)
    assert got["seconds"] == {"agent": 9.0, "verify": 3.0}


def test_scalars_flatten_a_record() -> None:
    s = scalars({**RECORD, "outcomes": outcomes(ROLLOUTS)})
    assert s["pass_rate"] == 0.4 and s["reward/whitebox/mean"] == 0.5 and s["reward/codex/std"] == 0.0
    assert s["tokens/dedup_ratio"] == 1.5 and s["tokens/trained"] == 12.0 and s["tokens/sampled"] == 20.0
    assert s["status/timeout"] == 1.0 and s["groups/zero_variance"] == 1.0
    assert s["mismatch/frac_truncated"] == 0.25 and s["entropy"] == 1.5 and "kl/k3" not in s
    assert s["time/verify"] == 10.0 * 3.0 / 12.0 and s["time/train"] == 2.0


def test_sink_writes_jsonl_and_tensorboard_events(tmp_path: Path) -> None:
    assert crc32c(b"123456789") == 0xE3069283  # the CRC-32C check value
    sink = MetricsSink(tmp_path)
    rec = {**RECORD, "outcomes": outcomes(ROLLOUTS)}
    sink.write(rec)
    sink.write({**rec, "step": 4, "reward": {"mean": 0.75, "std": 0.25}})
    lines = (tmp_path / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(x)["step"] for x in lines] == [3, 4]
    (events,) = (tmp_path / "tb").iterdir()
    assert events.name.startswith("events.out.tfevents.")
    got = read_scalars(events)
    assert got["reward/mean"] == [(3, 0.625), (4, 0.75)]
    assert got["pass_rate"] == [(3, pytest.approx(0.4)), (4, pytest.approx(0.4))]
    assert set(got) == set(scalars(rec))


def test_tensorboard_reads_our_event_files(tmp_path: Path) -> None:
    ea = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")
    sink = MetricsSink(tmp_path)
    sink.write({**RECORD, "outcomes": outcomes(ROLLOUTS)})
    acc = ea.EventAccumulator(str(tmp_path / "tb"))
    acc.Reload()
    assert [(e.step, e.value) for e in acc.Scalars("time/train")] == [(3, 2.0)]
    assert "reward/whitebox/mean" in acc.Tags()["scalars"]


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_progress_lines_and_eta() -> None:
    clock, lines = FakeClock(), []
    p = Progress(live=False, echo=lines.append, interval_s=5.0, clock=clock)
    with p:
        p.start("train", total=4, concurrency=2, step=0, steps=3)
        clock.now += 2
        p.on_rollout_done(ROLLOUTS[0])  # 2 s after the start: under interval_s, no line
        clock.now += 4
        p.on_rollout_done(ROLLOUTS[4])  # the timeout: failed
        assert lines == [
            "[train step 1/3] rollouts 2/4 (failed 1, running 2) | 14 tokens | 6s elapsed, eta 6s (run 30s)"
        ]  # fmt: skip: 6 s for 2 of 4 -> 6 s left; 2 more steps of 12 s
        clock.now += 6
        p.on_rollout_done(ROLLOUTS[1])
        p.on_rollout_done(ROLLOUTS[2])
        p.finish()
    assert (
        lines[-1]
        == "[train step 1/3] rollouts 4/4 (failed 1, running 0) | 20 tokens | 12s elapsed, eta 0s (run 24s)"
    )
    assert p.batch_seconds == [12.0]


def test_live_panel_on_a_terminal() -> None:
    """On a terminal the counters are drawn by rich Live (a real rich Console on a terminal stream)."""
    from rich.console import Console

    out, lines = io.StringIO(), []
    clock = FakeClock()
    console = Console(file=out, force_terminal=True, width=160, color_system=None)
    p = Progress(live=True, echo=lines.append, clock=clock, console=console)
    assert Progress(live=None).live is False  # pytest's stdout is not a terminal: plain lines
    with p:
        p.start("eval codex", total=3, concurrency=3)
        clock.now += 3
        p.on_rollout_done(ROLLOUTS[4])
        p.finish()
    assert "[eval codex] rollouts 1/3 (failed 1, running 2) | 8 tokens | 3s elapsed, eta 6s" in out.getvalue()
    assert lines == []  # nothing printed as plain lines while live
