"""harnessrl's own container store: podman and buildah on `<cache>/images/store`, vfs storage.

Every image harnessrl pulls, imports or builds lives here, whatever the user's podman or docker
set-up, so that it survives between runs and is found by digest. The `vfs` driver (a full copy per
layer: no kernel overlay, no fuse, no systemd) and buildah's `chroot` isolation are what work as
root inside a container such as CI's; builds may use the network (apt, pip), rollouts never do.

    store = ContainerStore()
    store.image_id("localhost/harnessrl-base:bookworm")   # "sha256:..." or None
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from harnessrl.cache import cache_root
from harnessrl.types import ImageError

TOOLS = {
    "podman": "podman (the image store: pull, import, inspect, unpack)",
    "buildah": "buildah (builds Dockerfiles)",
    "mmdebstrap": "mmdebstrap (makes the base image from Debian packages)",
}
"""What images need; `scripts/setup` installs them with apt-get when run as root."""
STORAGE = ("--storage-driver", "vfs")
_STEP = re.compile(r'building at STEP "(?P<step>.*)": (?P<why>.*)')


def images_dir() -> Path:
    """`<cache root>/images`: the store, the unpacked roots, their locks."""
    return cache_root() / "images"


HOST_CA = Path("/etc/ssl/certs/ca-certificates.crt")
BUILD_CA = "/run/harnessrl-host-ca.crt"


def host_trust() -> list[str]:
    """`buildah bud` flags that let a build's steps trust what the host trusts: the host's CA bundle
    read-only at `BUILD_CA`, and a pip configuration (`/etc/xdg/pip/pip.conf`, read-only) pointing
    pip at it, so that `pip install` in a Dockerfile reaches PyPI through a TLS-intercepting proxy as
    the host's pip does. Nothing of it is in the built image (a volume's mount point is left empty).
    [] when the host has no such bundle."""
    if not HOST_CA.is_file():
        return []
    conf = images_dir() / "build-pip.conf"
    if not conf.is_file():
        conf.parent.mkdir(parents=True, exist_ok=True)
        conf.write_text(f"[global]\ncert = {BUILD_CA}\n")
    return ["--volume", f"{HOST_CA}:{BUILD_CA}:ro", "--volume", f"{conf}:/etc/xdg/pip/pip.conf:ro"]


def missing_tools(names: Sequence[str] = tuple(TOOLS), path: str | None = None) -> list[str]:
    """The programs of `names` that are not on `path` (default: $PATH), each with what it is for."""
    return [TOOLS[n] for n in names if shutil.which(n, path=path) is None]


@contextlib.contextmanager
def locked(name: str) -> Iterator[None]:
    """An exclusive `flock` on `<images>/locks/<name>.lock`: one builder or unpacker of a thing at a
    time, across processes (the lock ends with its holder, however it dies)."""
    folder = images_dir() / "locks"
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(folder / f"{name}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _last_lines(text: str, n: int = 5) -> str:
    """The last `n` lines of a tool's output that say something, on one line."""
    lines = [line.strip() for line in text.strip().splitlines()]
    lines = [line for line in lines if line and not line.startswith("subprocess exited with status")]
    return " | ".join(lines[-n:])


def _build_output(log: str) -> str:
    """What the build's steps printed, without buildah's own `STEP k/n:` and `Error:` lines (the
    failing step's output may land before its header: the two are written through different pipes)."""
    return "\n".join(line for line in log.splitlines() if not line.startswith(("STEP ", "Error:")))


class ContainerStore:
    """podman and buildah on one storage root (module docstring)."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = root or images_dir() / "store"
        self.runroot = self.root.parent / "run"

    def _global(self) -> list[str]:
        return ["--root", str(self.root), "--runroot", str(self.runroot), *STORAGE]

    def podman(
        self, *args: str, timeout_s: float = 600, stdin: Any = None
    ) -> subprocess.CompletedProcess[str]:
        """`podman` on this store; never raises for its exit status (callers read it)."""
        missing = missing_tools(["podman"])
        if missing:
            raise ImageError(f"{missing[0]} is not installed (scripts/setup installs it as root)")
        self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
        cmd = ["podman", *self._global(), "--events-backend", "none", "--cgroup-manager", "cgroupfs", *args]
        return subprocess.run(
            cmd, capture_output=True, text=True, timeout=timeout_s, stdin=stdin, check=False
        )

    def inspect(self, ref: str) -> dict[str, Any] | None:
        """`podman image inspect` of `ref` in this store, or None when it has no such image."""
        done = self.podman("image", "inspect", ref, timeout_s=120)
        if done.returncode != 0:
            return None
        found = json.loads(done.stdout)
        return found[0] if found else None

    def image_id(self, ref: str) -> str | None:
        """The image id (`sha256:<hex>`) of `ref` in this store, or None."""
        found = self.inspect(ref)
        if found is None:
            return None
        image_id = str(found["Id"])
        return image_id if image_id.startswith("sha256:") else f"sha256:{image_id}"

    def pull(self, ref: str, timeout_s: float = 900) -> str | None:
        """Pull `ref` from a registry into this store: "" when done, else why not (one line)."""
        done = self.podman("pull", "--quiet", ref, timeout_s=timeout_s)
        return "" if done.returncode == 0 else _last_lines(done.stderr, 1)

    def build(self, context: Path, dockerfile: str, tag: str, log: Path, timeout_s: float = 3600) -> None:
        """`buildah bud` of `context` into this store as `tag`, its output to `log`. ImageError names
        the failing step (`RUN ...`) and its last lines of output."""
        missing = missing_tools(["buildah"])
        if missing:
            raise ImageError(f"{missing[0]} is not installed (scripts/setup installs it as root)")
        cmd = ["buildah", *self._global(), "bud", "--isolation", "chroot", "--layers=false", "--force-rm"]
        cmd += [*host_trust(), "-f", str(context / dockerfile), "-t", tag, str(context)]
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "w") as out:
            try:
                done = subprocess.run(
                    cmd, stdout=out, stderr=subprocess.STDOUT, timeout=timeout_s, check=False
                )
            except subprocess.TimeoutExpired:
                raise ImageError(
                    f"building {context / dockerfile} took over {timeout_s:.0f} s (log: {log})"
                ) from None
        if done.returncode != 0:
            text = log.read_text(errors="replace")
            match = _STEP.search(text)
            where = f"at step `{match['step']}` ({match['why']})" if match else f"(exit {done.returncode})"
            step_output = _build_output(text)
            raise ImageError(
                f"building {context / dockerfile} failed {where}: {_last_lines(step_output, 3)} (log: {log})"
            )

    @contextlib.contextmanager
    def mounted(self, image_id: str) -> Iterator[Path]:
        """The root filesystem of an image of this store, read in place (`podman image mount`; with
        vfs, the top layer's folder), for as long as the context lasts."""
        done = self.podman("image", "mount", image_id, timeout_s=300)
        if done.returncode != 0:
            raise ImageError(f"podman image mount {image_id}: {_last_lines(done.stderr, 1)}")
        try:
            yield Path(done.stdout.strip())
        finally:
            self.podman("image", "unmount", image_id, timeout_s=300)
