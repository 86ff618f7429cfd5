"""Unpack an image once into a read-only root filesystem, cached by digest.

    <cache>/images/roots/<hex>        the root filesystem (owned as in the image: root, mostly)
    <cache>/images/roots/<hex>.json   its id, name, ENV, WORKDIR, size and how long unpacking took

Made under a lock (`store.locked`) in a temporary folder beside it and renamed into place, so no
process ever sees half a root; never changed afterwards (sandboxes see it only through read-only
idmapped mounts, `sandbox/overlay.py`). `roots/` is root's alone (0700): an image's setuid programs
must not be runnable by other users of the host.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

from harnessrl.images.spec import ImageRoot
from harnessrl.images.store import ContainerStore, images_dir, locked
from harnessrl.types import ImageError


def roots_dir() -> Path:
    return images_dir() / "roots"


def _hex(image_id: str) -> str:
    return image_id.removeprefix("sha256:")


def cached_root(image_id: str) -> ImageRoot | None:
    """The unpacked root of `image_id` when it is there, else None."""
    path = roots_dir() / _hex(image_id)
    meta = path.with_name(f"{path.name}.json")
    if not (path.is_dir() and meta.is_file()):
        return None
    info = json.loads(meta.read_text())
    return ImageRoot(path, image_id, info["ref"], dict(info["env"]), info["workdir"], int(info["bytes"]))


def image_config(found: dict[str, Any]) -> tuple[dict[str, str], str]:
    """ENV and WORKDIR of a `podman image inspect` record."""
    config = found.get("Config") or {}
    env = dict(item.split("=", 1) for item in config.get("Env") or [] if "=" in item)
    return env, str(config.get("WorkingDir") or "")


def unpack(store: ContainerStore, ref: str, found: dict[str, Any] | None = None) -> tuple[ImageRoot, float]:
    """The unpacked root of the image `ref` of `store` (`found`: its `inspect` record, when the
    caller has it), made if it is not cached; and the seconds that took (0.0 when cached)."""
    found = found or store.inspect(ref)
    if found is None:
        raise ImageError(f"image {ref!r} is not in {store.root}")
    image_id = f"sha256:{_hex(str(found['Id']))}"
    cached = cached_root(image_id)
    if cached is not None:
        return cached, 0.0
    roots = roots_dir()
    roots.mkdir(parents=True, exist_ok=True)
    roots.chmod(0o700)
    with locked(f"root-{_hex(image_id)[:32]}"):
        cached = cached_root(image_id)
        if cached is not None:
            return cached, 0.0
        started = time.monotonic()
        env, workdir = image_config(found)
        final = roots / _hex(image_id)
        tmp = roots / f".tmp-{_hex(image_id)[:16]}-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        with store.mounted(image_id) as source:
            done = subprocess.run(["cp", "-a", f"{source}/.", str(tmp)], capture_output=True, text=True)
        if done.returncode != 0:
            shutil.rmtree(tmp, ignore_errors=True)
            raise ImageError(f"unpacking {ref} ({image_id}): {done.stderr.strip()[-300:]}")
        seconds = time.monotonic() - started
        size = int(subprocess.run(["du", "-sxb", str(tmp)], capture_output=True, text=True).stdout.split()[0])
        info = {"id": image_id, "ref": ref, "env": env, "workdir": workdir, "seconds": seconds, "bytes": size}
        final.with_name(f"{final.name}.json").write_text(json.dumps(info, indent=1) + "\n")
        os.rename(tmp, final)
        return ImageRoot(final, image_id, ref, env, workdir, size), seconds
