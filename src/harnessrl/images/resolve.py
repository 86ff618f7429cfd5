"""A task's environment, made ready: found, pulled or built, then unpacked (once each).

    root = resolve_image(ImageSpec(context=task / "environment", task=str(task)))
    SandboxSpec(image_root=root.path, extra_env=root.env, mount_dir=root.workdir or "/app", ...)

An image by name is looked for in harnessrl's store (`store.py`), then in podman's default store
(copied over), then pulled from a registry. A Dockerfile's image is named after its context's
digest (`spec.build_tag`): built once (FROM the base image, `base.py`, made first when needed),
found after. Anything that cannot be had is an ImageError of one line naming it and how to
provide it.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from dataclasses import dataclass

from harnessrl.images.base import BASE_REF, ensure_base
from harnessrl.images.spec import ImageRoot, ImageSpec, build_tag
from harnessrl.images.store import ContainerStore, images_dir, locked
from harnessrl.images.unpack import unpack
from harnessrl.types import ImageError

_FROM = re.compile(r"^\s*FROM\s+(?:--\S+\s+)*(\S+)", re.IGNORECASE | re.MULTILINE)


@dataclass(frozen=True)
class ImageReport:
    """What making an image ready did, for `harnessrl env build` and the benchmark."""

    root: ImageRoot
    base_s: float
    """Seconds making the base image (0.0: it was in the store, or not needed)."""
    build_s: float
    """Seconds building or pulling the image (0.0: it was in the store)."""
    unpack_s: float
    """Seconds unpacking it (0.0: the root was cached)."""


def resolve_image(
    spec: ImageSpec, *, build: bool = True, pull: bool = True, store: ContainerStore | None = None
) -> ImageRoot:
    """The unpacked root of `spec`'s image (`provide_image`)."""
    return provide_image(spec, build=build, pull=pull, store=store).root


def provide_image(
    spec: ImageSpec, *, build: bool = True, pull: bool = True, store: ContainerStore | None = None
) -> ImageReport:
    """Find, pull (`pull`) or build (`build`) `spec`'s image in `store` (default: harnessrl's), then
    unpack it (cached by digest). ImageError, one line, when it cannot be had."""
    store = store or ContainerStore()
    base_s = build_s = 0.0
    ref = spec.name if spec.name is not None else build_tag(spec)
    found = store.inspect(ref)
    if found is None and spec.name is not None:
        build_s = _fetch(spec, store, pull)
    elif found is None:
        if not build:
            raise ImageError(
                f"{_who(spec)}image of {spec.label} is not built: run `harnessrl env build {spec.task}`"
            )
        base_s, build_s = _build(spec, ref, store)
    root, unpack_s = unpack(store, ref, found)
    return ImageReport(root, base_s, build_s, unpack_s)


def _who(spec: ImageSpec) -> str:
    return f"task {spec.task}: " if spec.task else ""


def _fetch(spec: ImageSpec, store: ContainerStore, pull: bool) -> float:
    """Bring the named image into `store`: from podman's default store, else a registry."""
    assert spec.name is not None
    started = time.monotonic()
    with locked("pull"):
        if store.image_id(spec.name) is not None:
            return 0.0
        if _copy_from_default_store(spec.name, store):
            return time.monotonic() - started
        why = store.pull(spec.name) if pull else "pulling is off"
        if why:
            raise ImageError(
                f"{_who(spec)}image {spec.name!r} is not in the local stores ({store.root}, podman's "
                f"default) and could not be pulled ({why}): pull or build it there "
                f"(`podman pull {spec.name}`), or run `harnessrl env build {spec.task or '<task folder>'}` "
                "where a registry is reachable"
            )
    return time.monotonic() - started


def _copy_from_default_store(ref: str, store: ContainerStore) -> bool:
    """Copy `ref` from podman's default store (what `podman pull` and `podman build` fill) into
    `store`; False when it is not there (or there is no default store to ask)."""
    if shutil.which("podman") is None:
        return False
    try:
        exists = subprocess.run(["podman", "image", "exists", ref], capture_output=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return False
    if exists.returncode != 0:
        return False
    archive = images_dir() / f".export-{time.monotonic_ns()}.tar"
    try:
        saved = subprocess.run(["podman", "save", "-o", str(archive), ref], capture_output=True, timeout=1800)
        if saved.returncode != 0:
            return False
        return store.podman("load", "-i", str(archive), timeout_s=1800).returncode == 0
    finally:
        archive.unlink(missing_ok=True)


def _build(spec: ImageSpec, tag: str, store: ContainerStore) -> tuple[float, float]:
    """Build `spec`'s Dockerfile as `tag` (the base image first when it builds FROM it): the
    seconds each took. The build's log goes to `<images>/logs/`."""
    assert spec.context is not None
    dockerfile = spec.context / spec.dockerfile
    if not dockerfile.is_file():
        raise ImageError(f"{_who(spec)}no Dockerfile at {dockerfile}")
    base_s = 0.0
    if any(
        ref in (BASE_REF, BASE_REF.removeprefix("localhost/"))
        for ref in _FROM.findall(dockerfile.read_text())
    ):
        base_s = ensure_base(store)[1]
    started = time.monotonic()
    with locked(f"build-{tag.rsplit(':', 1)[-1]}"):
        if store.image_id(tag) is None:
            log = images_dir() / "logs" / f"{tag.split('/')[-1].replace(':', '-')}.log"
            try:
                store.build(spec.context, spec.dockerfile, tag, log)
            except ImageError as e:
                raise ImageError(f"{_who(spec)}{e}") from None
    return base_s, time.monotonic() - started
