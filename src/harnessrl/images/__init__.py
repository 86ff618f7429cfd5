"""Tasks that bring their own environment: OCI images as the sandbox's root filesystem.

`ImageSpec` (an image by name, or a Dockerfile to build) -> `resolve_image` -> `ImageRoot` (the
image unpacked once, read-only, cached by digest under `<cache>/images/roots`), which a sandbox
uses as `/` under a bounded writable overlay (`SandboxSpec.image_root`, `sandbox/overlay.py`).
Images live in harnessrl's own podman/buildah store (`store.py`); Dockerfiles build FROM a base
image made from Debian packages (`base.py`, `localhost/harnessrl-base:bookworm`).
"""

from harnessrl.images.resolve import ImageReport, provide_image, resolve_image
from harnessrl.images.spec import ImageRoot, ImageSpec
from harnessrl.images.store import ContainerStore, missing_tools

__all__ = [
    "ContainerStore",
    "ImageReport",
    "ImageRoot",
    "ImageSpec",
    "missing_tools",
    "provide_image",
    "resolve_image",
]
