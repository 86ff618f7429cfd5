"""Shared fixtures. Captured harness traffic and the ClawGym-layout example live in tests/fixtures/
(copied from the team's shared fixtures, notes included), so a fresh clone needs nothing beside it."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture(scope="session")
def shared_fixtures() -> Path:
    assert (FIXTURES / "harness-traffic").is_dir(), f"test fixtures missing at {FIXTURES}"
    return FIXTURES


@pytest.fixture
def sb_base() -> Iterator[Path]:
    """A sandbox base folder every sandbox uid can enter (pytest's own tmp_path sits under a 0700
    folder, which bwrap, started as the sandbox's unprivileged uid, cannot reach). Swept after."""
    from harnessrl.sandbox import identity
    from harnessrl.sandbox.folders import default_base_dir, sweep_stale

    parent = default_base_dir()
    parent.mkdir(mode=0o711, parents=True, exist_ok=True)
    base = Path(tempfile.mkdtemp(prefix="test-", dir=parent))
    base.chmod(0o711)
    yield base
    identity.unstage(base)  # this process's binds of unreachable folders: never delete through them
    sweep_stale(base)
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(params=["native", "python"])
def sandbox_agent(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run a test once with each in-sandbox agent (`agent.c` and `_agent.py`, SandboxSpec.agent):
    the sandbox and security tests use it, so both implementations keep one behaviour."""
    if request.param == "native":
        from harnessrl.sandbox.folders import native_agent

        if native_agent() is None and not os.environ.get("CI"):
            pytest.skip("no C compiler: the native sandbox agent cannot be built")
    monkeypatch.setenv("HARNESSRL_SANDBOX_AGENT", request.param)
    return str(request.param)


IMAGES = FIXTURES / "images"


@pytest.fixture(scope="session")
def image_root() -> object:
    """The unpacked image of `tests/fixtures/images/apt-package` (FROM the base image made from
    Debian packages, plus GNU hello): built, or found in `<cache>/images`, once per machine."""
    from harnessrl.images import ImageSpec, missing_tools, provide_image
    from harnessrl.sandbox.bwrap import bwrap_path

    missing = missing_tools()
    if missing:
        pytest.skip(f"images need {', '.join(missing)}: scripts/setup installs them as root")
    if os.geteuid() != 0 or bwrap_path() is None:
        pytest.skip("image sandboxes need root (host mounts) and bubblewrap")
    spec = ImageSpec(context=IMAGES / "apt-package" / "environment", task="apt-package")
    report = provide_image(spec)
    print(
        f"image {report.root.digest}: base {report.base_s:.1f} s, build {report.build_s:.1f} s, "
        f"unpack {report.unpack_s:.1f} s"
    )
    return report.root


HARBOR_IMAGES = FIXTURES / "harbor-images"


@pytest.fixture(scope="session")
def harbor_image_tasks() -> list[object]:
    """The Harbor tasks of `tests/fixtures/harbor-images`, each image built (FROM the base image),
    unpacked and prepared for rollouts once per session (cached in `<cache>/images` between runs)."""
    from harnessrl.images import missing_tools
    from harnessrl.rollout.environment import prepare_environments
    from harnessrl.sandbox.bwrap import bwrap_path
    from harnessrl.tasks import load_tasks

    missing = missing_tools()
    if missing:
        pytest.skip(f"images need {', '.join(missing)}: scripts/setup installs them as root")
    if os.geteuid() != 0 or bwrap_path() is None:
        pytest.skip("image sandboxes need root (host mounts) and bubblewrap")
    tasks = load_tasks(HARBOR_IMAGES).tasks
    prepare_environments(tasks)
    return list(tasks)


PREREQUISITES = {
    "bwrap": "bubblewrap (scripts/setup installs it with apt-get)",
    "npm": "npm (the real-harness tests install Claude Code, Codex and OpenClaw with it)",
    "cc": "a C compiler (builds the native sandbox agent; scripts/setup installs gcc with apt-get)",
    "setpriv": "util-linux setpriv (sandboxes start as their own unprivileged uid through it)",
    "podman": "podman (the image store; scripts/setup installs it with apt-get)",
    "buildah": "buildah (builds task Dockerfiles; scripts/setup installs it with apt-get)",
    "mmdebstrap": "mmdebstrap (makes the base image from Debian packages; scripts/setup installs it)",
}


def pytest_configure(config: pytest.Config) -> None:
    """In CI a missing system prerequisite fails the run at once instead of skipping its tests."""
    if not os.environ.get("CI"):
        return
    missing = [why for name, why in PREREQUISITES.items() if shutil.which(name) is None]
    if os.geteuid() != 0 and shutil.which("setpriv") is None:
        missing = [m for m in missing if not m.startswith("util-linux")]
    if missing:
        raise pytest.UsageError("CI=true and prerequisites are missing: " + "; ".join(missing))
