"""The sandbox's PATH shows the fixed list of programs (`sandbox/programs.py`), not what the host has."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harnessrl.harnesses import get_harness
from harnessrl.harnesses.adapter import Endpoint, HarnessContext
from harnessrl.sandbox import Sandbox, SandboxSpec
from harnessrl.sandbox.bwrap import bwrap_path
from harnessrl.sandbox.programs import (
    HOST_DIRS,
    PROGRAMS_DIR,
    SYSTEM_PATH,
    host_programs,
    inside_path,
    missing_programs,
    program_names,
)

pytestmark = pytest.mark.skipif(bwrap_path() is None, reason="bubblewrap is not installed")


def unlisted_host_program() -> str:
    """A program this host has on its system PATH that is not on the list (chromium here)."""
    listed = set(program_names())
    preferred = ["chromium", "google-chrome", "docker", "bwrap", "setpriv", "mmdebstrap"]
    for name in preferred + sorted(os.listdir("/usr/bin")):
        if name not in listed and any(os.access(os.path.join(d, name), os.X_OK) for d in HOST_DIRS):
            return name
    pytest.skip("every program of this host is on the list")


def test_the_list_is_read_and_found_on_this_host() -> None:
    names = program_names()
    assert len(names) == len(set(names)) == 460
    assert {"sh", "bash", "python3", "git", "grep", "node", "awk", "which"} <= set(names)
    assert not {"chromium", "google-chrome", "firefox", "docker", "agent-browser"} & set(names)
    found = dict(host_programs())
    assert found["sh"] in ("/usr/bin/sh", "/bin/sh")
    assert set(found) | set(missing_programs()) == set(names)


async def test_path_inside_is_the_list_whatever_the_host_has(sb_base: Path) -> None:
    hidden = unlisted_host_program()
    async with await Sandbox.create(SandboxSpec(base_dir=sb_base, path_prefix=("/opt/env/bin",))) as sb:
        res = await sb.exec(["sh", "-c", f'echo "$PATH"; command -v git; command -v {hidden} || echo hidden'])
        assert res.stdout.splitlines() == [f"/opt/env/bin:{PROGRAMS_DIR}", f"{PROGRAMS_DIR}/git", "hidden"]
        res = await sb.exec(["sh", "-c", f"ls {PROGRAMS_DIR} | wc -l; readlink {PROGRAMS_DIR}/git"])
        assert res.stdout.split() == [str(len(host_programs())), dict(host_programs())["git"]]
        # a harness launch's PATH names the programs folder: the same list, after its own folders
        ctx = HarnessContext("p", Endpoint("http://e", "k"), sb.workspace, sb.home, sb.host_home, Path("/x"))
        launch_path = get_harness("hermes").launch_path(ctx)
        assert launch_path == PROGRAMS_DIR
        res = await sb.exec(["sh", "-c", f"command -v {hidden} || echo hidden"], env={"PATH": launch_path})
        assert res.stdout == "hidden\n"


async def test_local_backend_and_images_put_their_system_path_in_its_place(sb_base: Path) -> None:
    assert inside_path(f"/a:{PROGRAMS_DIR}:/b", SYSTEM_PATH) == f"/a:{SYSTEM_PATH}:/b"
    assert inside_path("/a:/b", SYSTEM_PATH) == "/a:/b"
    async with await Sandbox.create(SandboxSpec(backend="local", base_dir=sb_base)) as sb:
        host = os.environ.get("PATH", SYSTEM_PATH)
        assert sb.command_env({"PATH": f"/n:{PROGRAMS_DIR}"})["PATH"] == f"/n:{host}"
        res = await sb.exec(["sh", "-c", 'echo "$PATH"'], env={"PATH": f"/n:{PROGRAMS_DIR}"})
        assert res.stdout == f"/n:{host}\n"
