"""Live checks: a real sandbox runs a command, and each installed harness prints its version from
inside one (the harness is third-party code: it runs where a rollout runs it, never on the host)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from functools import partial
from pathlib import Path

from harnessrl.doctor.check import Check, Machine, Outcome, fail, ok, warn
from harnessrl.doctor.system import IN_CONTAINER
from harnessrl.formats import untrusted_json
from harnessrl.harnesses import Harness
from harnessrl.harnesses.install import NODE_BIN, installed_folder, package_name
from harnessrl.harnesses.registry import HARNESSES
from harnessrl.images.runtime import runtimes_dir
from harnessrl.sandbox.bwrap import bwrap_path
from harnessrl.sandbox.sandbox import SYSTEM_PATH, Sandbox
from harnessrl.sandbox.spec import ExecResult, SandboxSpec
from harnessrl.types import SandboxError

SANDBOX_FIX = IN_CONTAINER
"""When the sandbox fails with every prerequisite in place, a container's seccomp or AppArmor
profile refusing user namespaces is what is left."""


def run_sandboxed(
    m: Machine, argv: Sequence[str], *, binds: Sequence[Path] = (), env: Mapping[str, str] | None = None
) -> ExecResult:
    """Run `argv` in a fresh default sandbox (with `binds` read-only), killed after `m.timeout_s`."""

    async def run() -> ExecResult:
        async with await Sandbox.create(SandboxSpec(ro_binds=tuple(binds))) as sb:
            return await sb.exec(argv, env=dict(env or {}), timeout_s=m.timeout_s)

    return asyncio.run(run())


def sandbox(m: Machine) -> Outcome:
    if bwrap_path() is None:
        return fail("not tried: bubblewrap is not installed", "sudo apt-get install -y bubblewrap")
    try:
        res = run_sandboxed(m, ["sh", "-c", "echo ok"])
    except Exception as e:  # any failure to start is the answer
        return fail(f"{type(e).__name__}: {e}")
    if (res.returncode, res.stdout) != (0, "ok\n"):
        return fail(f"`echo ok` in a sandbox: exit {res.returncode}, {res.stdout!r} {res.stderr[-300:]!r}")
    return ok("a bubblewrap sandbox started and ran `echo ok`")


def version_command(harness: Harness, folder: Path) -> tuple[list[str], str]:
    """The command printing the installed version of `harness` (installed at `folder`) and its PATH:
    npm, the package's own first `bin` with `--version` (a package with none: the adapter's `entry`),
    after its pinned Node when it has one; PyPI,
    the venv's python asking its package metadata."""
    name = package_name(harness.package)
    if harness.installer == "pypi":
        code = f"import importlib.metadata as m; print(m.version({name!r}))"
        return [str(folder / "bin" / "python"), "-c", code], SYSTEM_PATH
    manifest = folder / "node_modules" / name / "package.json"
    meta = untrusted_json.loads(manifest.read_bytes(), str(manifest))
    bins = meta.get("bin") if isinstance(meta, dict) else None
    node = folder / NODE_BIN
    path = f"{node}:{SYSTEM_PATH}" if node.is_dir() else SYSTEM_PATH
    if not (isinstance(bins, dict) and bins):  # a package with no `bin` (droid's): the adapter's entry
        return [str(harness.entry(folder)), "--version"], path
    command = next(iter(bins)) if isinstance(bins, dict) and bins else name.rsplit("/", 1)[-1]
    return [str(folder / "node_modules" / ".bin" / command), "--version"], path


def harness_version(m: Machine, harness: Harness) -> Outcome:
    folder = installed_folder(harness, m.cache)
    if folder is None:
        return warn(f"{harness.package} is not installed: it installs on first use (minutes, a registry)")
    reinstall = f"rm -rf {folder} && scripts/install_harnesses {harness.name}"
    try:
        argv, path = version_command(harness, folder)
    except (OSError, ValueError) as e:  # no manifest, or one that is not JSON
        return fail(f"a broken install at {folder}: {e}", reinstall)
    try:
        runtimes = runtimes_dir(m.cache)  # the Python runtime some venvs run on (images/runtime.py)
        binds = [folder, *([runtimes] if runtimes.is_dir() else [])]
        res = run_sandboxed(m, argv, binds=binds, env={"PATH": path})
    except SandboxError as e:  # the `sandbox` check fails with the reason and its fix
        return warn(f"not run: no sandbox starts here ({e})", "")
    want = harness.says_version or harness.version
    said = [line.strip()[:200] for line in (res.stdout + res.stderr).splitlines() if want in line]
    if said and not res.timed_out:
        return ok(f"says {said[0]!r} in a sandbox ({folder})")
    tail = (res.stderr or res.stdout).strip()[-300:]
    command = f"{Path(argv[0]).name} {' '.join(argv[1:])}"
    timed_out = ", timed out" if res.timed_out else ""
    why = f"`{command}` in a sandbox did not print {want} (exit {res.returncode}{timed_out})"
    return fail(f"{why}: {tail!r}", reinstall)


def harness_checks(m: Machine) -> list[Check]:
    """The live sandbox, then one check per harness installed from a package registry."""
    checks = [Check("sandbox", partial(sandbox, m), SANDBOX_FIX, slow=True)]
    for name, harness in HARNESSES.items():
        if harness.installer in ("npm", "pypi"):
            fix = f"scripts/install_harnesses {name}"
            checks.append(Check(f"harness:{name}", partial(harness_version, m, harness), fix, slow=True))
    return checks
