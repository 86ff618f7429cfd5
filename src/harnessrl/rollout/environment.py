"""What a task's rollouts run on: the host's root, or the task's image (`Task.environment`).

    prepare_environments(tasks)          # before any rollout: each image found, built or pulled, and
                                         # unpacked once (ImageError, one line, when it cannot be had)
    system = task_system(task)           # TaskSystem: the image's root (None: the host's), the workdir
    spec = system.agent_spec(task, ...)  # the agent's sandbox, with the task's env and limits
    launch = system.launch(launch)       # a `#!/usr/bin/env node` harness run by our pinned Node
    changes, root = system.scoring(rdir, agent_env)   # what the verifier scores, on which root

On an image the agent's sandbox has the image's unpacked root as `/` (`SandboxSpec.image_root`) and
its WORKDIR (or the task's `workdir`) as the working folder, with the task's files copied in; the
harness CLI and its runtime come read-only from our cache (`harness_binds`), and nothing else of the
host: the agent environment (python, pytest, numpy) is left out, because the verifier runs on the
image alone and an agent that saw more than the tests do would learn on another system. Harnesses
whose entry is a Node script (`#!/usr/bin/env node`: Codex, Gemini CLI, Copilot, Kilo, Continue)
would take `node` from the image's PATH, where there is usually none: `launch` runs their script
with the pinned Node of our cache (`install.pinned_node`: its own lockfile, installed once), so
the harness and what it starts by `process.execPath` run on it, while the agent's own commands keep
the image's PATH (its `node`, if it has one). The agent's writable layer is kept after the rollout
(`<rollout>/layer`, bounded) and is what the verifier scores (`verify/harbor_roots.py`); its working
folder is copied to `<rollout>/workspace` for the diff.

The task's `[environment]` limits and env apply on either root: `memory_mb` (the sandbox's memory
cap), `cpus` (a cgroup CPU quota where the machine has the controller), `storage_mb` (the size of the
sandbox's tmpfs: its home, /tmp and, on an image, the writable layer), `env` (every command's).
"""

from __future__ import annotations

import dataclasses
import os
import threading
from dataclasses import dataclass
from pathlib import Path

from harnessrl.harnesses.adapter import LaunchSpec
from harnessrl.harnesses.install import pinned_node
from harnessrl.images.resolve import resolve_image
from harnessrl.images.spec import ImageRoot, ImageSpec, image_of, task_workdir
from harnessrl.sandbox.config import SandboxConfig
from harnessrl.sandbox.fscopy import TreeReport, copy_untrusted
from harnessrl.sandbox.overlay import open_beneath
from harnessrl.sandbox.spec import SandboxSpec
from harnessrl.types import ImageError, Task, TaskEnvironment
from harnessrl.verify.harbor_roots import HostRoot, ImageVerifierRoot, VerifierRoot

LAYER = "layer"
"""The rollout folder's copy of the agent's writable layer (image tasks)."""
_roots: dict[ImageSpec, ImageRoot] = {}
_lock = threading.Lock()


def prepare_environments(tasks: list[Task]) -> dict[str, ImageRoot]:
    """Make every image of `tasks` ready (found, built or pulled, unpacked; once each), before any
    rollout: {task id: its root}. ImageError, one line naming the task and the image, otherwise."""
    ready: dict[str, ImageRoot] = {}
    for task in tasks:
        spec = image_of(task)
        if spec is None:
            continue
        try:
            ready[task.id] = _resolve(spec, build=True)
        except ImageError as e:  # every message names its task
            raise e if str(e).startswith("task ") else ImageError(f"task {spec.task}: {e}") from None
    return ready


def _resolve(spec: ImageSpec, build: bool) -> ImageRoot:
    with _lock:
        root = _roots.get(spec)
        if root is None:
            root = _roots[spec] = resolve_image(spec, build=build, pull=build)
        return root


def task_system(task: Task) -> TaskSystem:
    """The system `task` runs on. An image not prepared in this process (a Ray worker) is looked up,
    never built: ImageError when it is not there."""
    spec = image_of(task)
    if spec is None:
        return TaskSystem(None, task.input_mount_dir, task.environment)
    image = _resolve(spec, build=False)
    return TaskSystem(image, task_workdir(task, image), task.environment)


def layer_workspace(layer: Path, spec: SandboxSpec, workspace: Path) -> TreeReport | None:
    """`workspace` (new) made from the working folder in the kept `layer`: what the agent changed
    there, by `fscopy.copy_untrusted`'s rules (whiteouts of deleted files left out), for the diff.

    The folder is reached from `layer` without following a link in any component (`open_beneath`):
    the layer keeps the agent's links verbatim, and one in a parent (`/app` replaced by a link to
    `/` or `/root`, for a working folder `/app/work`) read through a host path would copy the
    host's files into the rollout. No such folder (the agent changed nothing there, deleted it, or
    put a link on the way): an empty workspace, and None."""
    try:
        fd = open_beneath(layer, spec.mount_dir)
    except OSError:
        workspace.mkdir(exist_ok=True)
        return None
    try:
        size = (spec.disk_mb or 1 << 20) * 2**20
        src = Path(f"/proc/self/fd/{fd}")
        return copy_untrusted(src, workspace, max_files=spec.max_files, max_bytes=size)
    finally:
        os.close(fd)


def node_script(path: Path) -> bool:
    """True when `path` (a harness entry on the host) is a script run by `node` from PATH."""
    try:
        with open(path, "rb") as f:
            first = f.readline(256)
    except OSError:
        return False
    words = first[2:].split() if first.startswith(b"#!") else []
    return bool(words) and (words[0].endswith(b"/node") or words[-1] == b"node")


@dataclass(frozen=True)
class TaskSystem:
    """A task's system on this machine: its image's root (None: the host's) and working folder."""

    image: ImageRoot | None
    workdir: str
    environment: TaskEnvironment | None

    def agent_spec(
        self,
        task: Task,
        workspace: Path | None,
        cfg: SandboxConfig,
        endpoint: tuple[str, int],
        binds: tuple[Path, ...],
        agent_env: Path | None,
    ) -> SandboxSpec:
        """The agent's sandbox of `task` (module docstring); `workspace` is bound at the workdir on
        the host root (None: the sandbox's own), never on an image (the task's files are copied in)."""
        env = self.environment or TaskEnvironment()
        tools = () if agent_env is None or self.image is not None else (agent_env,)
        extra = {**(self.image.env if self.image is not None else {}), **env.env}
        return SandboxSpec(
            backend=cfg.backend,
            agent=cfg.agent,
            workspace=workspace if self.image is None else None,
            mount_dir=self.workdir,
            image_root=self.image.path if self.image is not None else None,
            ro_binds=(*binds, *tools),
            path_prefix=tuple(str(p / "bin") for p in tools),
            extra_env=extra,
            endpoint=endpoint,
            memory_mb=env.memory_mb or cfg.memory_mb,
            cpus=env.cpus,
            **({"disk_mb": env.storage_mb} if env.storage_mb else {}),
        )

    def launch(self, launch: LaunchSpec, cache_root: Path | None = None) -> LaunchSpec:
        """On an image, a harness whose entry is a Node script runs on our pinned Node."""
        if self.image is None or not launch.argv or not node_script(Path(launch.argv[0])):
            return launch
        return dataclasses.replace(launch, argv=[str(pinned_node(cache_root)), *launch.argv])

    def scoring(self, rdir: Path, agent_env: Path | None) -> tuple[Path, VerifierRoot]:
        """What the verifier scores (the final workspace, or on an image the kept layer) and the
        root its sandbox runs on."""
        if self.image is None:
            return rdir / "workspace", HostRoot(agent_env, self.workdir)
        return rdir / LAYER, ImageVerifierRoot(self.image, self.workdir)
