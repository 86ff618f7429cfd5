"""The failure policy (`train.failures`): which failed rollouts train with reward 0, which are always
dropped, and GRPO groups under the minimum size dropped with a label. Real Rollout records and the
real trace builder; the end-to-end step is `test_train_loop.test_one_full_step`."""

from __future__ import annotations

import pytest

from harnessrl.config import Config, ConfigError, load_config
from harnessrl.train.batch import collect_trees, drop_small_groups
from harnessrl.types import ModelCall, Rollout, RolloutStatus

S = RolloutStatus


def rollout(rid: str, status: RolloutStatus, fault: str, group: str = "t/h", reward: float | None = 1.0):
    calls = [
        ModelCall(
            call_id=f"{rid}-0",
            rollout_id=rid,
            index=0,
            dialect="openai_chat",
            prompt_ids=[1, 2, 3],
            output_ids=[4, 5],
            output_logprobs=[-0.5, -0.25],
        )
    ]
    return Rollout(
        rollout_id=rid, task_id="t", harness="h", group_id=group, reward=reward, status=status,
        fault=fault, calls=calls,
    )  # fmt: skip


BATCH = [
    rollout("ok", S.OK, ""),
    rollout("slow", S.TIMEOUT, "policy", reward=None),
    rollout("crash", S.HARNESS_ERROR, "policy", reward=1.0),  # scored 1.0, trained as 0
    rollout("setup", S.HARNESS_ERROR, "infra"),
    rollout("sb", S.SANDBOX_ERROR, "infra"),
    rollout("eng", S.ENGINE_ERROR, "infra"),
    rollout("ver", S.VERIFIER_ERROR, "infra", reward=0.0),
    # the same statuses caused by the policy: a sandbox killed by its own command, a conversation
    # over the context, a checker that raised on the workspace. Dropping these would let a policy
    # heading for 0 opt out of its 0 (tests/test_security.py shows each from inside a sandbox).
    rollout("sb-p", S.SANDBOX_ERROR, "policy"),
    rollout("eng-p", S.ENGINE_ERROR, "policy"),
    rollout("ver-p", S.VERIFIER_ERROR, "policy", reward=0.0),
]


def test_policy_failures_train_with_reward_zero_and_infrastructure_faults_never() -> None:
    batch = collect_trees(BATCH, Config())
    trained = [(s.rollout_id, s.reward) for s in batch.samples]
    assert trained == [
        ("ok", 1.0),
        ("slow", 0.0),
        ("crash", 0.0),
        ("sb-p", 0.0),
        ("eng-p", 0.0),
        ("ver-p", 0.0),
    ]
    assert batch.labels == {
        "ok": 1,
        "timeout": 1,
        "harness_error": 2,
        "sandbox_error": 2,
        "engine_error": 2,
        "verifier_error": 2,
    }
    assert batch.failures_trained == {
        "timeout": 1,
        "harness_error": 1,
        "sandbox_error": 1,
        "engine_error": 1,
        "verifier_error": 1,
    }
    assert batch.samples[1].nodes[-1].logprobs[-2:] == [-0.5, -0.25]  # the calls they made, as sampled


def test_only_ok_trains_when_no_status_is_listed() -> None:
    cfg = load_config(None, ["train.failures.train_statuses=[]"])
    batch = collect_trees(BATCH, cfg)
    assert [s.rollout_id for s in batch.samples] == ["ok"] and batch.failures_trained == {}


def test_a_listed_status_trains_only_its_policy_caused_rollouts() -> None:
    cfg = load_config(None, ['train.failures.train_statuses=["engine_error"]'])
    batch = collect_trees(BATCH, cfg)
    assert [s.rollout_id for s in batch.samples] == ["ok", "eng-p"]
    with pytest.raises(ConfigError, match=r"train\.failures\.train_statuses"):
        load_config(None, ['train.failures.train_statuses=["filtered"]'])


def test_groups_under_the_minimum_are_dropped_with_a_label() -> None:
    rollouts = [
        rollout("a0", S.OK, "", group="a/h"),
        rollout("a1", S.TIMEOUT, "policy", group="a/h", reward=None),
        rollout("b0", S.TIMEOUT, "policy", group="b/h", reward=None),
        rollout("b1", S.SANDBOX_ERROR, "infra", group="b/h"),
    ]
    batch = collect_trees(rollouts, Config())
    drop_small_groups(batch, 2)
    assert [s.rollout_id for s in batch.samples] == ["a0", "a1"]
    assert batch.labels == {"ok": 1, "timeout": 1, "filtered:small_group": 1, "sandbox_error": 1}
    assert batch.failures_trained == {"timeout": 1} and batch.small_groups == 1
    assert [(t.sample.rollout_id, t.label, t.harness) for t in batch.trees] == [
        ("a0", "ok", "h"),
        ("a1", "timeout", "h"),
    ]
