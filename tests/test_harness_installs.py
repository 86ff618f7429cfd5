"""Every installed npm harness is read-only inside the sandbox: the sandbox's uid can run what is
installed but cannot change a harness's files (a rollout that rewrote a harness binary would run its
own code in every later rollout). One sandbox, one probe per npm harness in the registry."""

from __future__ import annotations

import asyncio
import shlex
from pathlib import Path

from harness_solve import MARKS, probe_installs

from harnessrl.harnesses import HARNESSES, get_harness

pytestmark = MARKS


async def test_npm_harness_installs_are_read_only_in_the_sandbox(sb_base: Path) -> None:
    names = [n for n, h in HARNESSES.items() if h.installer == "npm"]
    installs = {n: await asyncio.to_thread(get_harness(n).ensure_installed) for n in names}
    probes = []
    for name, folder in installs.items():
        manifest = shlex.quote(str(folder / "package.json"))
        probes.append(
            f"test -r {manifest} && echo {name}:read; "
            f"touch {shlex.quote(str(folder / 'x'))} 2>/dev/null && echo {name}:wrote-folder; "
            f"echo pwn >> {manifest} 2>/dev/null && echo {name}:wrote-manifest"
        )
    raw = await probe_installs(sb_base, "; ".join(probes))
    assert raw.stdout.split() == [f"{n}:read" for n in names], raw.stdout + raw.stderr
    assert not any("pwn" in (folder / "package.json").read_text() for folder in installs.values())
