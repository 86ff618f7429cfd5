"""The Harbor verifier: a task's `tests/test.sh` after the agent, in a sandbox of its own.

    result = run_harbor_verifier(task, final_workspace, runner=SandboxCommandRunner(...))   # CheckResult
    preflight(tasks, allow_network)        # TaskError before any rollout for what cannot be verified

`run_checker` sends every task whose checker is of kind `harbor` here. Harbor runs a task's tests in
the container the agent just used; harnessrl never does: the agent's sandbox is gone before this
starts, and the tests run in a fresh one made as follows.

The contract (today on the host's root, tomorrow on an image's; `VerifierRoot` is the seam):

- Root: `root.spec(base)` turns the verifier's `SandboxSpec` into one whose `/` is the task's system.
  `HostRoot` (tasks without an image, `TaskEnvironment.host_root`) keeps the host's read-only root
  plus the agent environment (first on PATH), as checkers get. An image root replaces `/` with the
  image's unpacked root filesystem and keeps everything else of the spec below.
- What the agent changed: `root.load(sandbox, changes)` copies it in, bounded (`SandboxSpec.disk_mb`,
  `max_files`, `fscopy.copy_untrusted`'s rules), before anything runs, and returns why it refused ("" when
  it did not); a refusal is the policy's failure (returncode 125). `HostRoot` copies the final
  workspace to the task's workdir (`Task.input_mount_dir`); an image root copies the agent's writable
  layer over the image root (Harbor tests may inspect any path), never the agent's live sandbox.
- The driver's interpreter is part of what the report's seal trusts: a python (or a library it
  loads, or its dynamic loader) that the agent could have replaced runs in the driver's process and
  can write and seal a report of its own. On the host root it is the host's, read-only. An image
  root must give it one of ours that nothing of the image or the agent's layer resolves (a static
  interpreter, or a runtime bound read-only together with its loader and libraries), or read the
  reward files on the host after the sandbox is gone instead; until then `preflight` refuses tasks
  on images. (Tests that run the agent's replaced `bash` or `python3` are the tests' business, as
  in Harbor: an image root that must not allow it applies the layer without system folders.)
- Ours, always, whatever the root: the tests read-only at `/tests` (a fresh copy of the task's
  `tests/`: nothing of the agent's under that name counts), `/logs/verifier` an empty tmpfs of
  `LOGS_MB` MiB of the sandbox's own (never the agent's: a reward it planted anywhere is not read),
  the drivers read-only at `/opt/harnessrl/checker`, our python (`bind_python`), cwd the workdir, HOME
  `/root`, the environment `checker_env` (plus the task's `[verifier] env`, for the tests only: an
  `LD_PRELOAD` there must not reach the driver), no network unless the task says its verifier needs
  it and the user allowed it (`Checker.network`, `verify.allow_verifier_network`), and the sandbox's
  uid, seccomp filter and limits as for checkers.
- Reward: `_harbor_driver.py` runs `bash /tests/test.sh`, then kills everything else in the sandbox
  and waits until it is gone, then reads `/logs/verifier/reward.json` and `reward.txt` through a
  descriptor it opened before the tests started (O_NOFOLLOW, non-blocking, regular files of at most
  64 KiB of UTF-8), and reports through the sealed channel `_driver.py` uses (its docstring). The host
  reads only that channel, and only from a driver that exited 0 (`_interpret`).
- Faults: a verifier sandbox that cannot be created is infrastructure (VerifierError: the verdict
  could not be had); so is a task this build cannot verify (an image root not given, a network not
  allowed: `preflight` says so before any rollout). Everything after the agent's changes were loaded is
  the policy's: a timeout, a refused copy, a tampered channel, no reward file, and a reward file that
  is not a regular file, too big, not UTF-8, not a number (`float()` as Harbor reads reward.txt), not
  finite, or negative scores 0 with the reason (`parse_rewards`). `reward.json` wins over `reward.txt`
  (Harbor's order; its numeric values are the metrics, non-numeric ones ignored as Harbor ignores them,
  `reward.txt` filling in a missing `reward`); the score is the `reward` metric where there is one,
  else the mean of the metrics, and every metric is kept (`CheckResult.metrics`).

What does not hold, and cannot here as in Harbor: programs the tests themselves run (the agent's code
that the tests import) run beside `test.sh` and can write `/logs/verifier` while it runs, exactly as a
task's own `reward.sh` can (`Checker.shell_entry`). A conftest.py or reward file the agent left in
its workspace changes nothing unless the tests load it.
"""

from __future__ import annotations

import json
import math
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from harnessrl.sandbox.sandbox import Sandbox
from harnessrl.sandbox.spec import SandboxSpec
from harnessrl.tasks.files import materialize_checker, write_files
from harnessrl.types import Task, TaskError, TaskFile, VerifierError, refusal
from harnessrl.verify.command_runner import DRIVER, TAMPERED, CommandRunner, RunOutput, checker_env
from harnessrl.verify.result import CheckResult
from harnessrl.verify.sandboxed import CHECKER_DIR, SandboxCommandRunner, load_workspace

HARBOR_DRIVER = Path(__file__).resolve().parent / "_harbor_driver.py"
REWARD_DIR = "/logs/verifier"
TESTS_DIR = "/tests"
LOGS_MB = 16
TAIL_CHARS = 2000


class VerifierRoot(Protocol):
    """What a Harbor verifier's sandbox runs on, and how what the agent changed gets into it."""

    def spec(self, base: SandboxSpec) -> SandboxSpec:
        """`base` with this root as the sandbox's `/` (everything else of `base` kept)."""
        ...

    def load(self, sb: Sandbox, changes: Path) -> str:
        """Copy what the agent changed (`changes`, on the host) into `sb`, bounded; why not, or ""."""
        ...


@dataclass(frozen=True)
class HostRoot:
    """The host's read-only root plus the agent environment; the changes are the final workspace."""

    def spec(self, base: SandboxSpec) -> SandboxSpec:
        return base

    def load(self, sb: Sandbox, changes: Path) -> str:
        return load_workspace(sb, changes)


def preflight(tasks: Sequence[Task], allow_network: bool, image_roots: bool = False) -> None:
    """TaskError, before any rollout, naming the Harbor tasks this run cannot verify: a verifier that
    needs the network where `verify.allow_verifier_network` is off, and (without `image_roots`) a task
    that runs on an image."""
    harbor = [t for t in tasks if t.checker is not None and t.checker.kind == "harbor"]
    online = [t.id for t in harbor if t.checker is not None and t.checker.network]
    if online and not allow_network:
        raise refusal(
            online,
            "say their verifier needs the network (Harbor [verifier] network_mode)",
            "harnessrl verifies offline unless told otherwise",
            "verify.allow_verifier_network",
            "to give their verifier (never the agent) the host's network",
        )
    imaged = [t.id for t in harbor if t.environment is not None and not t.environment.host_root]
    if imaged and not image_roots:
        raise TaskError(
            f"{len(imaged)} task(s) run on an image (docker_image or environment/Dockerfile), which this "
            f"build cannot run yet: {', '.join(imaged)}"
        )


def _number(text: str, name: str) -> tuple[float | None, str | None]:
    try:
        value = float(text)  # Harbor: float(reward.txt's text); surrounding whitespace is fine
    except (ValueError, OverflowError):
        return None, f"{REWARD_DIR}/{name} is not a number: {text[:80]!r}"
    return _checked(value, f"{REWARD_DIR}/{name}")


def _checked(value: float, what: str) -> tuple[float | None, str | None]:
    if not math.isfinite(value):
        return None, f"{what} is not finite: {value!r}"
    if value < 0:
        return None, f"{what} is negative: {value!r}"
    return value, None


def _from_json(text: str) -> tuple[dict[str, float], str | None]:
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):  # not JSON, an int over 4,300 digits; nesting
        return {}, f"{REWARD_DIR}/reward.json is not JSON"
    if not isinstance(data, dict):
        return {}, f"{REWARD_DIR}/reward.json holds {type(data).__name__}, not an object"
    metrics: dict[str, float] = {}
    for key, value in data.items():
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue  # Harbor keeps numeric values only
        number, why = _checked(float(value), f"{REWARD_DIR}/reward.json {key!r}")
        if why is not None or number is None:
            return {}, why
        metrics[key] = number
    if not metrics:
        return {}, f"{REWARD_DIR}/reward.json holds no number"
    return metrics, None


def parse_rewards(report: dict[str, Any]) -> tuple[dict[str, float], str | None]:
    """The metrics the tests wrote, from the driver's report -> (metrics, None) or ({}, why). Never raises."""
    problems = report.get("problems")
    if not isinstance(problems, dict):
        return {}, "verifier driver sent a malformed report"
    if problems:
        name, why = next(iter(problems.items()))
        return {}, f"{REWARD_DIR}/{name}: {why}" if name != "tests" else str(why)
    reward_json, reward_txt = report.get("reward_json"), report.get("reward_txt")
    if isinstance(reward_json, str):
        metrics, why = _from_json(reward_json)
        if why is None and "reward" not in metrics and isinstance(reward_txt, str):
            value, txt_why = _number(reward_txt, "reward.txt")
            if txt_why is None and value is not None:
                metrics["reward"] = value
        return metrics, why
    if isinstance(reward_txt, str):
        value, why = _number(reward_txt, "reward.txt")
        return ({"reward": value}, None) if value is not None else ({}, why)
    return {}, f"no reward: the tests wrote neither {REWARD_DIR}/reward.txt nor reward.json"


def _interpret(
    out: RunOutput, raw: bytes | None, timeout_s: float
) -> tuple[dict[str, float], str | None, Any]:
    """(metrics, error, report) from the run: a report counts only sealed, from a driver that exited 0."""
    if out.timed_out:
        return {}, f"verifier timed out after {timeout_s:g} s", None
    if out.returncode == TAMPERED:
        return {}, "verifier report channel was tampered with (a program the tests ran wrote to it)", None
    try:
        report = json.loads(raw) if raw else None
    except (ValueError, RecursionError):
        return {}, "verifier driver sent an unreadable report", None
    if not isinstance(report, dict) or out.returncode != 0:
        why = f"exit status {out.returncode}: {out.stderr[-300:].strip()}"
        return {}, f"verifier died ({why})", report
    if report.get("error"):
        return {}, f"the tests could not be run: {str(report['error']).strip().splitlines()[-1]}", report
    metrics, error = parse_rewards(report)
    return metrics, error, report


def _write_folder(task: Task, tmp: Path) -> None:
    materialize_checker(task, tmp)  # tests/...
    (tmp / "bin").mkdir()
    shutil.copyfile(DRIVER, tmp / "bin" / "driver.py")
    shutil.copyfile(HARBOR_DRIVER, tmp / "bin" / "harbor_driver.py")
    for path in (tmp, *tmp.rglob("*")):  # readable by the verifier's uid, writable by none
        path.chmod(0o755 if path.is_dir() or path.stat().st_mode & 0o100 else 0o644)


def _spec(task: Task, tmp: Path, runner: SandboxCommandRunner) -> SandboxSpec:
    assert task.checker is not None
    env = () if runner.agent_env is None else (runner.agent_env,)
    return SandboxSpec(
        mount_dir=task.input_mount_dir,
        home_dir="/root",
        ro_mounts=((tmp / "bin", CHECKER_DIR), (tmp / "tests", TESTS_DIR)),
        tmpfs_dirs=((REWARD_DIR, LOGS_MB),),
        ro_binds=env,
        path_prefix=tuple(str(p / "bin") for p in env),
        bind_python=True,
        memory_mb=runner.memory_mb,
        agent=runner.agent,
        network=task.checker.network,
    )


def run_harbor_verifier(
    task: Task,
    workspace: Path,
    timeout_s: float | None = None,
    runner: CommandRunner | None = None,
    root: VerifierRoot | None = None,
    allow_network: bool = False,
) -> CheckResult:
    """Score what the agent left with the task's Harbor tests (module docstring). Failures of the tests
    on it are data (score 0 + error); VerifierError when no verdict can be had (see `preflight`)."""
    checker = task.checker
    if checker is None or checker.kind != "harbor":
        raise VerifierError(f"task {task.id!r} has no Harbor verifier")
    if not isinstance(runner, SandboxCommandRunner) or runner.backend != "bwrap":
        raise VerifierError(f"task {task.id!r}: Harbor tests run only in the verifier's own sandbox (bwrap)")
    if root is None and task.environment is not None and not task.environment.host_root:
        raise VerifierError(f"task {task.id!r} runs on an image: its verifier needs that image's root")
    if checker.network and not allow_network:
        raise VerifierError(
            f"task {task.id!r}: its verifier needs the network (verify.allow_verifier_network)"
        )
    ws = workspace.resolve()
    if not ws.is_dir():
        raise VerifierError(f"workspace {workspace} is not a directory")
    limit = timeout_s if timeout_s is not None else checker.timeout_s
    root = root or HostRoot()
    python = str(runner.agent_env / "bin" / "python") if runner.agent_env else sys.executable
    started = time.monotonic()
    tmp = Path(tempfile.mkdtemp(prefix="harnessrl-harbor-")).resolve()
    try:
        _write_folder(task, tmp)
        spec = root.spec(_spec(task, tmp, runner))
        argv = [python, "-I", "-B", f"{CHECKER_DIR}/harbor_driver.py", f"{TESTS_DIR}/test.sh"]
        argv += [task.input_mount_dir, REWARD_DIR, "3", json.dumps(checker.env)]  # the tests' env only
        env = checker_env("/root", python)
        out, raw = runner.run_sealed(
            spec, argv, env, task.input_mount_dir, limit, lambda sb: root.load(sb, ws)
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    metrics, error, report = _interpret(out, raw, limit)
    score = (
        (metrics["reward"] if "reward" in metrics else sum(metrics.values()) / len(metrics))
        if metrics
        else 0.0
    )
    said = report.get("stdout") if isinstance(report, dict) else None
    return CheckResult(
        score=score if error is None else 0.0,
        metrics=metrics if error is None else {},
        error=error,
        mode="harbor",
        stdout_tail=(said if isinstance(said, str) else out.stdout)[-TAIL_CHARS:],
        stderr_tail=out.stderr[-TAIL_CHARS:],
        duration_s=time.monotonic() - started,
        timed_out=out.timed_out,
    )


def run_harbor_reference(
    task: Task, workspace: Path, script: TaskFile, runner: CommandRunner | None, timeout_s: float
) -> str | None:
    """Run a Harbor task's `solution/solve.sh` as Harbor's oracle does (`bash /solution/solve.sh`, cwd
    the workdir, `[solution] env`) on `workspace` bound at the workdir, in a fresh sandbox (the host
    root; `tasks check`). -> why it failed, or None."""
    if not isinstance(runner, SandboxCommandRunner) or runner.backend != "bwrap":
        return "Harbor solutions run only in a sandbox (bwrap)"
    tmp = Path(tempfile.mkdtemp(prefix="harnessrl-solution-")).resolve()
    try:
        write_files([script], tmp)
        for path in (tmp, *tmp.rglob("*")):
            path.chmod(0o755)
        env_dirs = () if runner.agent_env is None else (runner.agent_env,)
        spec = SandboxSpec(
            workspace=workspace.resolve(),
            mount_dir=task.input_mount_dir,
            home_dir="/root",
            ro_mounts=((tmp / "solution", "/solution"),),
            ro_binds=env_dirs,
            path_prefix=tuple(str(p / "bin") for p in env_dirs),
            memory_mb=runner.memory_mb,
            agent=runner.agent,
        )
        env = {
            **checker_env("/root", sys.executable),
            **task.metadata.get("harbor", {}).get("solution_env", {}),
        }
        out = runner.run_in(spec, ["bash", "/solution/solve.sh"], env, task.input_mount_dir, timeout_s)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if out.timed_out:
        return f"reference timed out after {timeout_s:g} s"
    if out.returncode != 0:
        return f"reference exited with status {out.returncode}: {out.stderr[-300:].strip()}"
    return None
