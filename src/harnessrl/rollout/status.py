"""A rollout's one status (DESIGN invariant 3) and who caused it (`Rollout.fault`).

The first failure wins. The calls recorded in the session decide first (a lost record, a prompt over
the context, an engine failure: they win over whatever the harness said), then the harness's own
result (timeout, exit status). Whatever untrusted code, its requests or its workspace could have
caused is the policy's fault (trained with reward 0 under `train.failures`); what happened before
untrusted code ran or outside its reach is the infrastructure's (never trained). The rule fails
closed: once the harness was launched, an exception while reading what it produced (its output, its
calls, its workspace, the checker's and judge's verdicts on it) is the policy's whatever its type
(`untrusted_failure`, `policy_faults`); `internal_error` is left for what broke before.
"""

from __future__ import annotations

import contextlib
import logging
import traceback
from collections.abc import Iterator, Sequence

from harnessrl.harnesses import HarnessResult
from harnessrl.types import ModelCall, Rollout, RolloutStatus

log = logging.getLogger(__name__)
OVERFLOW_TAG = "context_overflow"
"""Tag of a call the proxy refused because its prompt does not fit (`proxy.limits.ContextOverflow`)."""


REASON_HEAD = 1000
"""Most characters of a status reason's cause (what went wrong, said first)."""
REASON_TAIL = 1000
"""Most characters of the tail that follows the cause (the end of the harness's own output)."""


def set_status(
    rollout: Rollout, status: RolloutStatus, cause: str, tail: str = "", *, policy: bool = False
) -> None:
    """The first failure wins: a rollout keeps the status of what went wrong first. The reason is the
    cause first (at most REASON_HEAD characters), then the last REASON_TAIL characters of `tail`.
    `policy`: the policy caused it (`Rollout.fault`), else the infrastructure did."""
    if rollout.status is not RolloutStatus.OK:
        return
    rollout.status = status
    rollout.fault = "policy" if policy else "infra"
    if len(cause) > REASON_HEAD:
        cause = f"{cause[: REASON_HEAD - 40]} [... {len(cause) - REASON_HEAD + 40} characters cut ...]"
    tail = tail.strip()
    if len(tail) > REASON_TAIL:
        tail = f"[... {len(tail) - REASON_TAIL} characters cut ...] {tail[-REASON_TAIL:]}"
    rollout.status_reason = f"{cause} | {tail}" if tail else cause


PROXY_LOST = "proxy process died"
"""Start of the `status_reason` of a rollout whose proxy process died under it (`proxy.process`)."""


def proxy_lost(rollout: Rollout, why: str) -> None:
    """The proxy process serving the rollout died: `engine_error` of the infrastructure (nothing the
    policy sends can kill it; a request that crashed the proxy would be a bug of ours), never trained;
    the calls it had journaled are kept."""
    set_status(rollout, RolloutStatus.ENGINE_ERROR, f"{PROXY_LOST} ({why}); the calls it recorded are kept")


TRACEBACK_CHARS = 20_000
"""Most characters of a traceback kept in `reward_detail` (a RecursionError's runs to a megabyte)."""


def internal_error(rollout: Rollout, e: BaseException) -> None:
    """A bug of ours in a rollout, before untrusted code ran: `harness_error` of the infrastructure,
    with the traceback kept (never scored). Call it from an `except` block."""
    log.exception("rollout %s failed unexpectedly", rollout.rollout_id)
    set_status(rollout, RolloutStatus.HARNESS_ERROR, f"internal error: {describe(e)}")
    rollout.reward_detail["traceback"] = traceback.format_exc()[-TRACEBACK_CHARS:]


def untrusted_failure(rollout: Rollout, status: RolloutStatus, what: str, e: BaseException) -> None:
    """Reading what untrusted code produced or left failed (`what`: the stage): the policy's fault,
    whatever the exception (fail closed: no output of the policy may turn its 0 into a dropped
    rollout). Reward 0, the exception's type in the reason, the traceback kept (so the rollout is not
    scored after it). Call it from an `except` block."""
    log.warning("rollout %s: %s failed: %s", rollout.rollout_id, what, describe(e), exc_info=True)
    set_status(rollout, status, f"{what} failed: {describe(e)}", policy=True)
    rollout.reward = 0.0
    rollout.reward_detail.setdefault("traceback", traceback.format_exc()[-TRACEBACK_CHARS:])


@contextlib.contextmanager
def policy_faults(
    rollout: Rollout, status: RolloutStatus, what: str, infra: tuple[type[Exception], ...] = ()
) -> Iterator[None]:
    """Run a stage that reads what untrusted code produced: any exception but the `infra` types
    (errors that say no score could be had, which untrusted code cannot cause) becomes
    `untrusted_failure(rollout, status, what, e)`."""
    try:
        yield
    except infra:
        raise
    except Exception as e:
        untrusted_failure(rollout, status, what, e)


def describe(e: BaseException) -> str:
    """`Type: message` of an exception, the message cut to 300 characters."""
    try:
        text = str(e)
    except Exception:  # a message that cannot be made is no reason to lose the type
        text = "?"
    return f"{type(e).__name__}: {text[:300]}" if text else type(e).__name__


def settle(
    rollout: Rollout,
    calls: Sequence[ModelCall],
    dropped: int,
    result: HarnessResult | None,
    *,
    stopped: bool = False,
    timeout_s: float | None = None,
) -> None:
    """Step 5, once the session is closed: the rollout's calls, and its status from the calls and the
    harness's result (`engine_error` for a trajectory with a call the engine failed, not the
    policy's doing, or with a lost record or a prompt over the context after the first call, which
    are). `stopped`: the runner ended the harness at a context overflow."""
    rollout.calls = list(calls)
    if stopped:
        status_from_calls(rollout, dropped, stopped=True)
    elif result is not None:
        status_from_harness(rollout, result, dropped, timeout_s)


def status_from_calls(rollout: Rollout, dropped: int, stopped: bool = False) -> bool:
    """Statuses the recorded calls decide, in order: a lost record, a prompt over the context, an
    engine failure (these win over whatever the harness said: an OpenClaw whose every call failed
    reports "request timed out"). Calls still in flight at close are partial, not failures. True
    when one was set."""
    if dropped:
        # A rollout with a lost call must not be trained as if complete; and what broke recording
        # came in a request over the rollout's endpoint, which its commands can send: the policy's
        # failure, trained with reward 0 on the calls that were recorded (else one odd request was
        # a way out of a 0). The proxy logs each with its traceback.
        cause = f"{dropped} calls could not be recorded (see the proxy's log)"
        set_status(rollout, RolloutStatus.ENGINE_ERROR, cause, policy=True)
        return True
    failed = [c for c in rollout.calls if c.error]
    over = [c for c in failed if OVERFLOW_TAG in c.tags]
    if over:
        first = over[0]
        error = (first.error or "").removeprefix(f"{OVERFLOW_TAG}: ")
        what = "stopped at that call" if stopped else f"{len(rollout.calls)} calls in all"
        cause = f"context_overflow: the prompt of call {first.index} does not fit the model: {error} ({what})"
        # The first call's prompt is the harness's own (a configuration that does not fit); any later
        # one grew from the policy's turns, or is a request a command sent with the rollout's key.
        set_status(rollout, RolloutStatus.ENGINE_ERROR, cause, policy=first.index > 0)
        return True
    if failed:
        first = failed[0]
        set_status(rollout, RolloutStatus.ENGINE_ERROR, f"call {first.index}: {first.error}")
        return True
    return False


def status_from_harness(
    rollout: Rollout, result: HarnessResult, dropped: int = 0, timeout_s: float | None = None
) -> None:
    rollout.exit_code = result.exit_code
    rollout.final_message = result.final_message
    if status_from_calls(rollout, dropped):
        return
    if result.timed_out:
        limit = f" of {timeout_s:g} s" if timeout_s else ""
        cause = f"harness ran past its timeout{limit}"
        set_status(rollout, RolloutStatus.TIMEOUT, cause, result.error, policy=True)
    elif not result.ok:  # the policy's doing once the harness has talked to the model
        cause = f"harness failed (exit code {result.exit_code})"
        set_status(rollout, RolloutStatus.HARNESS_ERROR, cause, result.error, policy=bool(rollout.calls))
