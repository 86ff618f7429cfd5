"""The base image, made from Debian packages: Debian 12 minbase with python3, no registry needed.

    FROM localhost/harnessrl-base:bookworm

`mmdebstrap --variant=minbase --include=python3 bookworm` writes a root filesystem as a tar from
the Debian mirror (the only network it needs), and `podman import` makes it an image of
harnessrl's store (`store.py`), where it stays between runs: made once per machine (~20-40 s),
found by name after. Task Dockerfiles build FROM it (`resolve.py` makes it first when one does).
Documentation, manual pages and translations are left out (dpkg path-exclude).
"""

from __future__ import annotations

import subprocess
import tempfile
import time
from typing import IO

from harnessrl.images.store import ContainerStore, locked, missing_tools
from harnessrl.types import ImageError

BASE_REF = "localhost/harnessrl-base:bookworm"
SUITE = "bookworm"
PACKAGES = ("python3",)
EXCLUDES = ("/usr/share/doc/*", "/usr/share/man/*", "/usr/share/info/*", "/usr/share/locale/*")


def mmdebstrap_argv(
    mirror: str | None = None, *, suite: str = SUITE, packages: tuple[str, ...] = PACKAGES
) -> list[str]:
    """The command that writes a minbase root filesystem of Debian `suite` with `packages` (default:
    the base image's) as a tar on stdout."""
    argv = ["mmdebstrap", "--quiet", "--variant=minbase", f"--include={','.join(packages)}"]
    argv += [f"--dpkgopt=path-exclude={p}" for p in EXCLUDES]
    argv += ['--aptopt=Acquire::Languages "none"', suite, "-"]
    return [*argv, mirror] if mirror else argv


def mmdebstrap_error(err: IO[bytes]) -> str:
    """The last line mmdebstrap wrote to `err` (a file it wrote its stderr to), or "no output"."""
    err.seek(0)
    lines = err.read()[-2000:].decode(errors="replace").strip().splitlines()
    return lines[-1] if lines else "no output"


def ensure_base(store: ContainerStore, mirror: str | None = None) -> tuple[str, float]:
    """The base image's id in `store`, made first if it is not there; and the seconds that took
    (0.0 when it was there). ImageError when it cannot be made (the tools, the mirror)."""
    found = store.image_id(BASE_REF)
    if found is not None:
        return found, 0.0
    with locked("base"):
        found = store.image_id(BASE_REF)  # another process may have made it while we waited
        if found is not None:
            return found, 0.0
        missing = missing_tools(["mmdebstrap", "podman"])
        if missing:
            raise ImageError(
                f"the base image {BASE_REF} needs {' and '.join(missing)}: run scripts/setup as root"
            )
        started = time.monotonic()
        _make(store, mirror)
        made = store.image_id(BASE_REF)
        if made is None:
            raise ImageError(f"the base image {BASE_REF} was imported but is not in {store.root}")
        return made, time.monotonic() - started


def _make(store: ContainerStore, mirror: str | None) -> None:
    """mmdebstrap's tar piped straight into `podman import` (nothing written but the image)."""
    with tempfile.TemporaryFile() as err:
        debootstrap = subprocess.Popen(mmdebstrap_argv(mirror), stdout=subprocess.PIPE, stderr=err)
        assert debootstrap.stdout is not None
        try:
            imported = store.podman(
                "import", "--change", 'CMD ["/bin/bash"]', "-", BASE_REF, stdin=debootstrap.stdout
            )
        finally:
            debootstrap.stdout.close()
            debootstrap.wait()
        why = mmdebstrap_error(err)
    if debootstrap.returncode != 0:
        raise ImageError(f"mmdebstrap could not make the base image {BASE_REF}: {why}")
    if imported.returncode != 0:
        raise ImageError(
            f"podman import of the base image {BASE_REF} failed: {imported.stderr.strip()[-300:]}"
        )
