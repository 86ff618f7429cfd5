"""The Harbor verifier: a task's `tests/test.sh` after the agent, in a sandbox of its own.

    result = run_harbor_verifier(task, changes, runner=SandboxCommandRunner(...), root=root)  # CheckResult
    preflight(tasks, allow_network)        # TaskError before any rollout for what cannot be verified

`run_checker` sends every task whose checker is of kind `harbor` here. Harbor runs a task's tests in
the container the agent just used; harnessrl never does: the agent's sandbox is gone before this
starts, and the tests run in a fresh one made as follows.

- Root (`harbor_roots.py`): `HostRoot` for tasks without an image (the host's read-only root plus
  the agent environment, first on PATH, as checkers get; the changes are the final workspace, copied
  to the workdir), `ImageVerifierRoot` for tasks on an image (the image's unpacked root as `/`, the
  changes a copy of the agent's writable layer stacked over it, admitted by the layer rule: nothing
  the agent wrote under the system folders or at the top of `/` reaches the tests). A root not given
  is made from the task (its image resolved, built if needed: `tasks check`).
- Ours, whatever the root: the tests read-only at `/tests` (a fresh copy of the task's `tests/`), an
  empty `/logs/verifier` that the host made on the sandbox's own tmpfs and holds a descriptor of
  (`SandboxSpec.out_dirs`: never the agent's folder of that name), cwd the workdir, HOME `/root`, the
  task's `[verifier] env` on top of the root's, no network unless the task says its verifier needs
  it and the user allowed it (`Checker.network`, `verify.allow_verifier_network`), and the sandbox's
  uid, seccomp filter and limits as for checkers.
- Reward: the sandbox's agent runs `bash /tests/test.sh` (stdin closed, output captured and
  bounded). When it exits, the host ends every process of the sandbox and waits until they are gone
  (`Sandbox.stop`: its cgroup empty), then reads `reward.json` and `reward.txt` itself, through the
  descriptor (`harbor_rewards.py`: O_NOFOLLOW, non-blocking, regular files of at most 64 KiB of
  UTF-8). No interpreter inside the sandbox is trusted with the verdict, so a `python3`, libc or
  loader of the image or of the agent's layer cannot forge one; the tests write their reward there,
  exactly as in Harbor.
- Faults: a verifier sandbox that cannot be created is infrastructure (VerifierError: the verdict
  could not be had); so is a task this run cannot verify (a network not allowed: `preflight` says so
  before any rollout; an image that cannot be had: ImageError). But when the same sandbox without
  the agent's layer can be created (a control start), the layer stopped it, and that is the policy's
  (score 0). Everything after that is the policy's too: changes that do not fit or a working folder
  turned into a link (refused), a timeout, the sandbox dying under the tests, no reward file, and a
  reward file that is not a regular file, too big, not UTF-8, not a number, not finite, or negative
  score 0 with the reason. `reward.json` wins over `reward.txt` (its numeric values are the metrics,
  `reward.txt` filling in a missing `reward`); the score is the `reward` metric where there is one,
  else the mean, and every metric is kept (`CheckResult.metrics`).

What does not hold, and cannot here as in Harbor: programs the tests themselves run (the agent's
code that the tests import, a conftest.py in a folder the tests collect) run beside `test.sh` and
can write `/logs/verifier` while it runs, exactly as a task's own `reward.sh` can.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harnessrl.images.resolve import resolve_image
from harnessrl.images.spec import image_of, task_workdir
from harnessrl.sandbox.sandbox import Sandbox
from harnessrl.sandbox.spec import ExecResult, SandboxSpec
from harnessrl.sandbox.sync import run_sync
from harnessrl.tasks.files import materialize_checker
from harnessrl.types import SandboxError, Task, VerifierError, refuse_unless
from harnessrl.verify.command_runner import CommandRunner
from harnessrl.verify.harbor_rewards import REWARD_DIR, parse_rewards, read_rewards, score_of
from harnessrl.verify.harbor_roots import Admission, HostRoot, ImageVerifierRoot, VerifierRoot
from harnessrl.verify.result import CheckResult
from harnessrl.verify.sandboxed import SandboxCommandRunner

TESTS_DIR = "/tests"
TAIL_CHARS = 2000


def preflight(tasks: Sequence[Task], allow_network: bool) -> None:
    """TaskError, before any rollout, naming the Harbor tasks whose verifier needs the network where
    `verify.allow_verifier_network` is off."""
    harbor = [t for t in tasks if t.checker is not None and t.checker.kind == "harbor"]
    online = [t.id for t in harbor if t.checker is not None and t.checker.network]
    refuse_unless(
        allow_network,
        online,
        "say their verifier needs the network (Harbor [verifier] network_mode)",
        "harnessrl verifies offline unless told otherwise",
        "verify.allow_verifier_network",
        "to give their verifier (never the agent) the host's network",
    )


def default_root(task: Task, runner: SandboxCommandRunner) -> VerifierRoot:
    """The root `task`'s tests run on: its image (resolved; built or pulled when missing: ImageError
    when it cannot be had), else the host's."""
    spec = image_of(task)
    if spec is None:
        return HostRoot(runner.agent_env, task.input_mount_dir)
    image = resolve_image(spec)
    return ImageVerifierRoot(image, task_workdir(task, image))


@dataclass
class TestsRun:
    """What running the tests gave: the command's result (None when it never ran) or why not, and
    the reward files as read by the host."""

    result: ExecResult | None = None
    refused: str = ""
    texts: dict[str, str | None] = field(default_factory=dict)
    problems: dict[str, str] = field(default_factory=dict)


async def _run_tests(
    spec: SandboxSpec, root: VerifierRoot, changes: Path, env: dict[str, str], limit: float
) -> TestsRun:
    try:
        sb = await Sandbox.create(spec)
    except SandboxError as e:
        if spec.layers and await _starts(spec.model_copy(update={"layers": ()})):
            return TestsRun(refused=f"the verifier's sandbox could not start on the agent's changes: {e}")
        raise VerifierError(f"the verifier's sandbox could not be created: {e}") from e
    try:
        refused = await asyncio.to_thread(root.load, sb, changes)
        if refused:
            return TestsRun(refused=refused)
        argv = ["bash", f"{TESTS_DIR}/test.sh"]
        try:
            res = await sb.exec(argv, env=env, cwd=spec.mount_dir, timeout_s=limit, grace_s=1.0)
        except SandboxError as e:  # it died under the tests (their doing, or the code they ran)
            return TestsRun(refused=f"sandbox error: {e}")
        await sb.stop()  # every process the tests left is gone before the host reads
        texts, problems = await asyncio.to_thread(read_rewards, sb.out_dir(REWARD_DIR))
        return TestsRun(res, "", texts, problems)
    finally:
        await sb.destroy()


async def _starts(spec: SandboxSpec) -> bool:
    """Whether a sandbox of `spec` can be made (the control start when one on the agent's layer could
    not: if this one starts, the layer stopped the other, and that is the policy's doing)."""
    try:
        sb = await Sandbox.create(spec)
    except SandboxError:
        return False
    await sb.destroy()
    return True


def _spec(task: Task, tests: Path, runner: SandboxCommandRunner) -> SandboxSpec:
    assert task.checker is not None
    env = task.environment
    return SandboxSpec(
        home_dir="/root",
        ro_mounts=((tests, TESTS_DIR),),
        out_dirs=(REWARD_DIR,),
        memory_mb=(env.memory_mb if env is not None and env.memory_mb else runner.memory_mb),
        cpus=env.cpus if env is not None else None,
        agent=runner.agent,
        network=task.checker.network,
    )


def _checked_call(task: Task, runner: CommandRunner | None, allow_network: bool) -> SandboxCommandRunner:
    checker = task.checker
    if checker is None or checker.kind != "harbor":
        raise VerifierError(f"task {task.id!r} has no Harbor verifier")
    if not isinstance(runner, SandboxCommandRunner) or runner.backend != "bwrap":
        raise VerifierError(f"task {task.id!r}: Harbor tests run only in the verifier's own sandbox (bwrap)")
    if checker.network and not allow_network:
        raise VerifierError(
            f"task {task.id!r}: its verifier needs the network (verify.allow_verifier_network)"
        )
    return runner


def run_harbor_verifier(
    task: Task,
    changes: Path,
    timeout_s: float | None = None,
    runner: CommandRunner | None = None,
    root: VerifierRoot | None = None,
    allow_network: bool = False,
) -> CheckResult:
    """Score what the agent left (`changes`: the final workspace on the host root, a copy of its
    writable layer on an image, changed in place by the layer rule) with the task's Harbor tests
    (module docstring). Failures of the tests on it are data (score 0 + error); VerifierError when
    no verdict can be had."""
    sandboxed = _checked_call(task, runner, allow_network)
    assert task.checker is not None
    if not changes.is_dir():
        raise VerifierError(f"workspace {changes} is not a directory")
    changes = changes.resolve()
    root = root or default_root(task, sandboxed)
    limit = timeout_s if timeout_s is not None else task.checker.timeout_s
    started = time.monotonic()
    admitted = root.admit(changes)
    if admitted.refused:
        return _result(TestsRun(refused=admitted.refused), admitted, limit, started)
    tmp = Path(tempfile.mkdtemp(prefix="harnessrl-harbor-")).resolve()
    try:
        materialize_checker(task, tmp)  # tests/...
        for path in (tmp, *tmp.rglob("*")):  # readable by the verifier's uid, writable by none
            path.chmod(0o755 if path.is_dir() or path.stat().st_mode & 0o100 else 0o644)
        spec = root.spec(_spec(task, tmp / "tests", sandboxed), changes)
        env = {**root.env(), **task.checker.env}  # the task's env reaches the tests, as in Harbor
        run = run_sync(_run_tests(spec, root, changes, env, limit))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return _result(run, admitted, limit, started)


def _result(run: TestsRun, admitted: Admission, limit: float, started: float) -> CheckResult:
    res = run.result
    metrics: dict[str, float]
    error: str | None
    if run.refused:
        metrics, error = {}, run.refused
    elif res is None or res.timed_out:
        metrics, error = {}, f"verifier timed out after {limit:g} s"
    else:
        metrics, error = parse_rewards(run.texts, run.problems)
        if error is not None and res.error:
            error = f"the tests could not be run: {res.error.strip()}"
    return CheckResult(
        score=score_of(metrics) if error is None else 0.0,
        metrics=metrics if error is None else {},
        error=error,
        mode="harbor",
        stdout_tail=(res.stdout if res else "")[-TAIL_CHARS:],
        stderr_tail=(res.stderr if res else "")[-TAIL_CHARS:],
        duration_s=time.monotonic() - started,
        timed_out=bool(res and res.timed_out),
        dropped=admitted.dropped,
        dropped_count=admitted.count,
    )
