"""The configurations the commands run by default ship inside the package (`harnessrl/configs/`, package
data found with `importlib.resources`): a wheel built from the checkout, installed into a folder of its
own, resolves and loads each of them from the installed copy, not from a checkout."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harnessrl.commands.ablation import ABLATION_CONFIG
from harnessrl.commands.quickstart import QUICKSTART_CONFIG
from harnessrl.commands.train import DEMO_CONFIG
from harnessrl.commands.transfer import TRANSFER_CONFIG
from harnessrl.config import ConfigError, shipped_config

REPO = Path(__file__).resolve().parents[1]
DEFAULTS = [QUICKSTART_CONFIG, DEMO_CONFIG, TRANSFER_CONFIG, ABLATION_CONFIG]


def test_checkout_configs_folder_is_the_package_data() -> None:
    package = REPO / "src" / "harnessrl" / "configs"
    assert (REPO / "configs").resolve() == package
    for name in DEFAULTS:
        assert shipped_config(name) == package / name
    with pytest.raises(ConfigError, match=r"no configuration 'nope\.toml' shipped"):
        shipped_config("nope.toml")


@pytest.mark.skipif(importlib.util.find_spec("setuptools") is None, reason="setuptools not installed")
def test_installed_wheel_resolves_every_default_config(tmp_path: Path) -> None:
    src = tmp_path / "src"  # a copy, so the build leaves nothing in the checkout
    shutil.copytree(REPO / "src", src / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, src / name)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    wheels, target = tmp_path / "wheels", tmp_path / "site"
    build = [*pip, "wheel", "--no-deps", "--no-build-isolation", str(src), "-w", str(wheels)]
    subprocess.run(build, check=True)
    (wheel,) = wheels.glob("harnessrl-*.whl")
    subprocess.run([*pip, "install", "--no-deps", "--target", str(target), str(wheel)], check=True)
    probe = (
        "import sys, harnessrl; from harnessrl.config import load_config, shipped_config\n"
        "for name in sys.argv[1:]:\n"
        "    path = shipped_config(name); load_config(path); print(path)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, *DEFAULTS],
        env={"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin"},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.splitlines() == [str(target / "harnessrl" / "configs" / n) for n in DEFAULTS]
