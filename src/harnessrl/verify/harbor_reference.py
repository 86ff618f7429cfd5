"""A Harbor task's oracle: `solution/solve.sh` as Harbor runs it, for `harnessrl tasks check`.

    error = run_harbor_reference(task, workspace, script, runner, timeout_s)   # None when it ran

`bash /solution/solve.sh` with the workdir as cwd and the task's `[solution] env`, in a fresh sandbox
of the system the agent gets: on the host's root with `workspace` bound at the workdir (changed in
place), or on the task's image (resolved; built when missing) with the task's files copied in. On an
image everything the script changed is its sandbox's writable layer: `workspace` is replaced by a
copy of that layer, which the verifier then takes as the agent's (`harbor_roots.ImageVerifierRoot`).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

from harnessrl.images.resolve import resolve_image
from harnessrl.images.spec import image_of, task_workdir
from harnessrl.sandbox.fscopy import remove_tree
from harnessrl.sandbox.sandbox import Sandbox
from harnessrl.sandbox.spec import SandboxSpec
from harnessrl.sandbox.sync import run_sync
from harnessrl.tasks.files import write_files
from harnessrl.types import SandboxError, Task, TaskFile
from harnessrl.verify.command_runner import CommandRunner, RunOutput, checker_env
from harnessrl.verify.sandboxed import SandboxCommandRunner


def _solution_env(task: Task, base: dict[str, str]) -> dict[str, str]:
    return {**base, **task.metadata.get("harbor", {}).get("solution_env", {})}


def _on_host(
    task: Task, workspace: Path, folder: Path, runner: SandboxCommandRunner, timeout_s: float
) -> RunOutput:
    env_dirs = () if runner.agent_env is None else (runner.agent_env,)
    spec = SandboxSpec(
        workspace=workspace.resolve(),
        mount_dir=task.input_mount_dir,
        home_dir="/root",
        ro_mounts=((folder, "/solution"),),
        ro_binds=env_dirs,
        path_prefix=tuple(str(p / "bin") for p in env_dirs),
        memory_mb=runner.memory_mb,
        agent=runner.agent,
    )
    env = _solution_env(task, checker_env("/root", sys.executable))
    return runner.run_in(spec, ["bash", "/solution/solve.sh"], env, task.input_mount_dir, timeout_s)


async def _on_image(
    task: Task, workspace: Path, folder: Path, runner: SandboxCommandRunner, timeout_s: float
) -> tuple[RunOutput, str]:
    spec_of = image_of(task)
    assert spec_of is not None
    image = resolve_image(spec_of)
    workdir = task_workdir(task, image)
    spec = SandboxSpec(
        image_root=image.path,
        extra_env=image.env,
        mount_dir=workdir,
        home_dir="/root",
        ro_mounts=((folder, "/solution"),),
        memory_mb=runner.memory_mb,
        agent=runner.agent,
    )
    layer = folder.parent / "layer"
    sb = await Sandbox.create(spec)
    try:
        await sb.load_workspace(workspace)
        env = _solution_env(task, {"HOME": "/root"})
        res = await sb.exec(["bash", "/solution/solve.sh"], env=env, cwd=workdir, timeout_s=timeout_s)
    finally:
        report = await sb.destroy(keep_layer=layer)
    remove_tree(workspace)
    os.rename(layer, workspace)
    truncated = report.truncated if report is not None else ""
    return RunOutput(res.returncode, res.stdout, res.stderr + res.error, res.timed_out), truncated


def run_harbor_reference(
    task: Task, workspace: Path, script: TaskFile, runner: CommandRunner | None, timeout_s: float
) -> str | None:
    """Run a Harbor task's `solution/solve.sh` (module docstring) -> why it failed, or None."""
    if not isinstance(runner, SandboxCommandRunner) or runner.backend != "bwrap":
        return "Harbor solutions run only in a sandbox (bwrap)"
    tmp = Path(tempfile.mkdtemp(prefix="harnessrl-solution-")).resolve()
    try:
        write_files([script], tmp)
        for path in (tmp, *tmp.rglob("*")):
            path.chmod(0o755)
        truncated = ""
        if image_of(task) is None:
            out = _on_host(task, workspace, tmp / "solution", runner, timeout_s)
        else:
            out, truncated = run_sync(_on_image(task, workspace, tmp / "solution", runner, timeout_s))
    except SandboxError as e:
        return f"reference sandbox: {e}"
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if out.timed_out:
        return f"reference timed out after {timeout_s:g} s"
    if out.returncode != 0:
        return f"reference exited with status {out.returncode}: {out.stderr[-300:].strip()}"
    if truncated:
        return f"what the reference changed does not fit the caps: {truncated}"
    return None
