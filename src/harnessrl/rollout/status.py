"""A rollout's one status (DESIGN invariant 3) and who caused it (`Rollout.fault`), decided once.

The runner's stages write down what happened (`Happened`: was the harness known, its sandbox made,
the harness launched, its workspace within the caps, its output readable; did the proxy process
die; which calls were recorded; how the harness says it ended; the checker's verdict), and `decide`
turns that into one status: the first stage that failed, in the order the stages run. The calls
recorded in the session decide before the harness's own result (a lost record, a prompt over the
context, an engine failure win over whatever the harness said). Whatever untrusted code, its
requests or its workspace could have caused is the policy's fault (trained with reward 0 under
`train.failures`); what happened before untrusted code ran or outside its reach is the
infrastructure's (never trained). The rule fails closed: once the harness was launched, an exception
while reading what it produced (its output, its calls, its workspace, the checker's and judge's
verdicts on it) is the policy's whatever its type (`untrusted_failure`); `internal_error` is left
for what broke before.
"""

from __future__ import annotations

import logging
import traceback
from dataclasses import dataclass

from harnessrl.harnesses import HarnessResult
from harnessrl.proxy.session_host import OVERFLOW_TAG
from harnessrl.sandbox.spec import ExecResult
from harnessrl.types import HarnessError, ModelCall, Rollout, RolloutStatus, SandboxError, SandboxLost

log = logging.getLogger(__name__)

REASON_HEAD = 1000
"""Most characters of a status reason's cause (what went wrong, said first)."""
REASON_TAIL = 1000
"""Most characters of the tail that follows the cause (the end of the harness's own output)."""
PROXY_LOST = "proxy process died"
"""Start of the `status_reason` of a rollout whose proxy process died under it (`proxy.process`)."""
TRACEBACK_CHARS = 20_000
"""Most characters of a traceback kept in `reward_detail` (a RecursionError's runs to a megabyte)."""


@dataclass(frozen=True)
class Failure:
    """What went wrong in one stage: the status it earns, its cause, the end of the harness's own
    output (`tail`), and whether the policy caused it (`Rollout.fault`; else the infrastructure did)."""

    status: RolloutStatus
    cause: str
    tail: str = ""
    policy: bool = False

    @property
    def reason(self) -> str:
        """The cause first (at most REASON_HEAD characters), then the last REASON_TAIL of the tail."""
        cause, tail = self.cause, self.tail.strip()
        if len(cause) > REASON_HEAD:
            cause = f"{cause[: REASON_HEAD - 40]} [... {len(cause) - REASON_HEAD + 40} characters cut ...]"
        if len(tail) > REASON_TAIL:
            tail = f"[... {len(tail) - REASON_TAIL} characters cut ...] {tail[-REASON_TAIL:]}"
        return f"{cause} | {tail}" if tail else cause


@dataclass
class Happened:
    """What happened to one rollout, written down by the runner's stages in the order they run."""

    unknown_harness: str | None = None
    """Why the harness's name resolved to no adapter."""
    sandbox_made: bool = False
    """The agent's sandbox was made (anything it dies of from here on, its commands can cause)."""
    setup_error: SandboxError | HarnessError | None = None
    """What stopped the sandbox being made or the harness being installed, configured or run."""
    launched: bool = False
    """The harness was launched: untrusted code ran."""
    raw: ExecResult | None = None
    """The harness's raw output (None: it did not run to its end, or the runner stopped it)."""
    workspace_over: str | None = None
    """Why the final workspace is over the caps or could not be made safe to read (never scored)."""
    result: HarnessResult | None = None
    """How the harness says it ended, parsed from `raw`."""
    unreadable: Failure | None = None
    """Reading what the launched harness produced raised (`untrusted_failure`)."""
    stopped: bool = False
    """The runner ended the harness: a call overflowed the context, or the proxy process died."""
    proxy_lost: str | None = None
    """Why the proxy process serving the rollout died."""
    calls: list[ModelCall] | None = None
    """The calls the closed session recorded (None: the session was not closed)."""
    dropped: int = 0
    """Calls the session could not record."""
    timeout_s: float | None = None
    """The harness's time limit (said in a timeout's reason)."""
    crashed: Failure | None = None
    """An exception outside the stages above (`crash`)."""
    scoring: Failure | None = None
    """The checker or the judge failed on the workspace, no verdict could be had, or scoring broke."""
    artifacts: str | None = None
    """Why the artifacts could not be written."""


def decide(h: Happened) -> Failure | None:
    """The rollout's one failure (None: ok): the first stage that failed, in the order they run."""
    for failure in (
        _setup(h),
        _workspace(h),
        h.unreadable,
        _proxy(h),
        _calls(h),
        _harness(h),
        h.crashed,
        h.scoring,
        _artifacts(h),
    ):
        if failure is not None:
            return failure
    return None


def settle(rollout: Rollout, h: Happened) -> None:
    """Set the rollout's status, fault and reason from what happened (`decide`)."""
    failure = decide(h)
    if failure is None:
        rollout.status, rollout.fault, rollout.status_reason = RolloutStatus.OK, "", ""
        return
    rollout.status, rollout.status_reason = failure.status, failure.reason
    rollout.fault = "policy" if failure.policy else "infra"


def _setup(h: Happened) -> Failure | None:
    if h.unknown_harness is not None:
        return Failure(RolloutStatus.HARNESS_ERROR, h.unknown_harness)
    e = h.setup_error
    if e is None:
        return None
    if isinstance(e, HarnessError):  # it could not be installed or configured
        return Failure(RolloutStatus.HARNESS_ERROR, str(e))
    # a sandbox that died under the harness: a command can end its own sandbox
    return Failure(RolloutStatus.SANDBOX_ERROR, str(e), policy=h.sandbox_made and isinstance(e, SandboxLost))


def _workspace(h: Happened) -> Failure | None:
    if h.workspace_over is None:
        return None
    return Failure(
        RolloutStatus.HARNESS_ERROR, f"final workspace over the limit: {h.workspace_over}", policy=True
    )


def _proxy(h: Happened) -> Failure | None:
    """The proxy process serving the rollout died: `engine_error` of the infrastructure (nothing the
    policy sends can kill it; a request that crashed the proxy would be a bug of ours), never trained;
    the calls it had journaled are kept."""
    if h.proxy_lost is None:
        return None
    return Failure(
        RolloutStatus.ENGINE_ERROR, f"{PROXY_LOST} ({h.proxy_lost}); the calls it recorded are kept"
    )


def _calls(h: Happened) -> Failure | None:
    """What the recorded calls decide, in order: a lost record, a prompt over the context, an engine
    failure (these win over whatever the harness said: an OpenClaw whose every call failed reports
    "request timed out"). Calls still in flight at close are partial, not failures. Read once the
    harness ended on its own with a result, or the runner stopped it."""
    if h.calls is None or not (h.stopped or h.result is not None):
        return None
    if h.dropped:
        # A rollout with a lost call must not be trained as if complete; and what broke recording
        # came in a request over the rollout's endpoint, which its commands can send: the policy's
        # failure, trained with reward 0 on the calls that were recorded (else one odd request was
        # a way out of a 0). The proxy logs each with its traceback.
        cause = f"{h.dropped} calls could not be recorded (see the proxy's log)"
        return Failure(RolloutStatus.ENGINE_ERROR, cause, policy=True)
    failed = [c for c in h.calls if c.error]
    over = [c for c in failed if OVERFLOW_TAG in c.tags]
    if over:
        first = over[0]
        error = (first.error or "").removeprefix(f"{OVERFLOW_TAG}: ")
        what = "stopped at that call" if h.stopped else f"{len(h.calls)} calls in all"
        cause = f"context_overflow: the prompt of call {first.index} does not fit the model: {error} ({what})"
        # The first call's prompt is the harness's own (a configuration that does not fit); any later
        # one grew from the policy's turns, or is a request a command sent with the rollout's key.
        return Failure(RolloutStatus.ENGINE_ERROR, cause, policy=first.index > 0)
    if failed:
        return Failure(RolloutStatus.ENGINE_ERROR, f"call {failed[0].index}: {failed[0].error}")
    return None


def _harness(h: Happened) -> Failure | None:
    """The harness's own account, once it ended on its own: a timeout, a failed exit (the policy's
    doing once the harness has talked to the model)."""
    result = h.result
    if h.calls is None or h.stopped or result is None:
        return None
    if result.timed_out:
        limit = f" of {h.timeout_s:g} s" if h.timeout_s else ""
        cause = f"harness ran past its timeout{limit}"
        return Failure(RolloutStatus.TIMEOUT, cause, result.error, policy=True)
    if not result.ok:
        cause = f"harness failed (exit code {result.exit_code})"
        return Failure(RolloutStatus.HARNESS_ERROR, cause, result.error, policy=bool(h.calls))
    return None


def _artifacts(h: Happened) -> Failure | None:
    if h.artifacts is None:
        return None
    # the diff reads the agent's files: whatever breaks it is the policy's to answer for
    why = f"artifacts could not be written: {h.artifacts}"
    return Failure(RolloutStatus.HARNESS_ERROR, why, policy=True)


def internal_error(rollout: Rollout, e: BaseException) -> Failure:
    """A bug of ours in a rollout, before untrusted code ran: `harness_error` of the infrastructure,
    with the traceback kept (never scored). Call it from an `except` block."""
    log.exception("rollout %s failed unexpectedly", rollout.rollout_id)
    rollout.reward_detail["traceback"] = traceback.format_exc()[-TRACEBACK_CHARS:]
    return Failure(RolloutStatus.HARNESS_ERROR, f"internal error: {describe(e)}")


def untrusted_failure(rollout: Rollout, status: RolloutStatus, what: str, e: BaseException) -> Failure:
    """Reading what untrusted code produced or left failed (`what`: the stage): the policy's fault,
    whatever the exception (fail closed: no output of the policy may turn its 0 into a dropped
    rollout). Reward 0, the exception's type in the reason, the traceback kept (so the rollout is not
    scored after it). Call it from an `except` block."""
    log.warning("rollout %s: %s failed: %s", rollout.rollout_id, what, describe(e), exc_info=True)
    rollout.reward = 0.0
    rollout.reward_detail.setdefault("traceback", traceback.format_exc()[-TRACEBACK_CHARS:])
    return Failure(status, f"{what} failed: {describe(e)}", policy=True)


def crash(rollout: Rollout, h: Happened, e: BaseException) -> Failure:
    """An exception while running the rollout outside its stages: the policy's once its harness ran
    (it made the calls being settled), else a bug of ours (`internal_error`). From an `except` block."""
    if h.stopped or h.launched:
        return untrusted_failure(rollout, RolloutStatus.HARNESS_ERROR, "settling the rollout", e)
    return internal_error(rollout, e)


def describe(e: BaseException) -> str:
    """`Type: message` of an exception, the message cut to 300 characters."""
    try:
        text = str(e)
    except Exception:  # a message that cannot be made is no reason to lose the type
        text = "?"
    return f"{type(e).__name__}: {text[:300]}" if text else type(e).__name__
