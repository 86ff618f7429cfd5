"""What a task's environment is (ImageSpec) and what it becomes on this machine (ImageRoot)."""

from __future__ import annotations

import hashlib
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ConfigDict, model_validator

from harnessrl.types import ImageError, Task, TaskEnvironment

MAX_CONTEXT_FILES = 10_000
MAX_CONTEXT_BYTES = 1 << 30
"""A build context past these is refused (it is hashed whole to name the built image)."""


class ImageSpec(BaseModel):
    """A task's environment as an OCI image: one by name, or a Dockerfile to build. Runtime object:
    a task loader maps its own model onto it (Harbor's `[environment] docker_image`, or
    `environment/Dockerfile`)."""

    model_config = ConfigDict(frozen=True)

    name: str | None = None
    """An image reference (`docker_image`): found in a local store, else pulled from a registry."""
    context: Path | None = None
    """A build context folder holding the Dockerfile (Harbor: `<task>/environment`)."""
    dockerfile: str = "Dockerfile"
    """The Dockerfile's path inside `context`."""
    task: str = ""
    """The task (its folder, as `harnessrl env build` takes it): named in every message."""

    @model_validator(mode="after")
    def _one_source(self) -> ImageSpec:
        if (self.name is None) == (self.context is None):
            raise ValueError("an ImageSpec has either an image name or a build context, not both or neither")
        return self

    @property
    def label(self) -> str:
        """How messages name it: the image, or the Dockerfile."""
        if self.name is not None:
            return self.name
        assert self.context is not None
        return str(self.context / self.dockerfile)


@dataclass(frozen=True)
class ImageRoot:
    """An image unpacked on this machine: a read-only root filesystem for `SandboxSpec.image_root`."""

    path: Path
    """The unpacked root (`<cache>/images/roots/<digest>`): never changed once made."""
    digest: str
    """The image's id (`sha256:` of its config): the cache key."""
    ref: str
    """The name it was found or built under."""
    env: dict[str, str] = field(default_factory=dict)
    """The image's `ENV` (its config's Env): give it to the sandbox (`SandboxSpec.extra_env`)."""
    workdir: str = ""
    """The image's `WORKDIR` ("" when it sets none)."""
    bytes: int = 0
    """Size of the unpacked root."""


def _slug(text: str) -> str:
    slug = re.sub(r"[^a-z0-9._-]+", "-", text.lower()).strip("-._")
    return slug[:64] or "task"


def context_digest(context: Path) -> str:
    """sha256 over every path, mode and content of a build context (links by their target, no link
    followed): the same context names the same built image, a changed one is built again."""
    h = hashlib.sha256()
    files = size = 0
    for folder, dirs, names in os.walk(context):
        dirs.sort()
        for name in sorted(names + [d for d in dirs if os.path.islink(os.path.join(folder, d))]):
            path = os.path.join(folder, name)
            st = os.lstat(path)
            files += 1
            size += st.st_size
            if files > MAX_CONTEXT_FILES or size > MAX_CONTEXT_BYTES:
                raise ImageError(f"build context {context} is over {MAX_CONTEXT_FILES} files or 1 GiB")
            h.update(f"{os.path.relpath(path, context)}\0{st.st_mode:o}\0".encode())
            if stat.S_ISLNK(st.st_mode):
                h.update(os.readlink(path).encode())
            elif stat.S_ISREG(st.st_mode):
                with open(path, "rb") as f:
                    for chunk in iter(lambda: f.read(1 << 20), b""):
                        h.update(chunk)
            h.update(b"\0")
    return h.hexdigest()


def build_tag(spec: ImageSpec) -> str:
    """The local name a Dockerfile's image is built under: the task and its context's digest."""
    assert spec.context is not None
    digest = context_digest(spec.context)
    name = _slug(spec.context.resolve().parent.name)
    return f"localhost/harnessrl-env/{name}:{digest[:20]}"


def environment_spec(env: TaskEnvironment, task: str = "") -> ImageSpec:
    """The image of a task's environment (`Task.environment`, not `host_root`): its `image` by name,
    else its Dockerfile's build context; `task` (its folder) is named in messages."""
    if env.image is not None:
        return ImageSpec(name=env.image, task=task)
    if env.build_context is None:
        raise ImageError(f"task {task}: its environment names no image and no build context")
    return ImageSpec(context=env.build_context, task=task)


def image_of(task: Task) -> ImageSpec | None:
    """The image `task` runs on, or None for the host's root."""
    env = task.environment
    if env is None or env.host_root:
        return None
    return environment_spec(env, task.source or task.id)


def task_workdir(task: Task, root: ImageRoot) -> str:
    """Where the agent and the verifier of `task` start on its image `root`: the task's `workdir`,
    else the image's WORKDIR, else `Task.input_mount_dir` (Harbor's usual /app)."""
    explicit = task.environment.workdir if task.environment is not None else None
    return explicit or root.workdir or task.input_mount_dir


def task_image_spec(task_dir: Path) -> ImageSpec:
    """The image of a Harbor task folder: `[environment] docker_image` of its `task.toml`, else its
    `environment/Dockerfile`. (The environment part only; the task loader owns the rest.)"""
    import tomllib

    toml = task_dir / "task.toml"
    try:
        env = tomllib.loads(toml.read_text()).get("environment", {}) if toml.is_file() else {}
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise ImageError(f"{toml}: {e}") from e
    name = env.get("docker_image") if isinstance(env, dict) else None
    if isinstance(name, str) and name:
        return ImageSpec(name=name, task=str(task_dir))
    if (task_dir / "environment" / "Dockerfile").is_file():
        return ImageSpec(context=task_dir / "environment", task=str(task_dir))
    raise ImageError(
        f"task {task_dir}: no [environment] docker_image in task.toml and no environment/Dockerfile"
    )
