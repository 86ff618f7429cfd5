"""The committed lockfiles of the harnesses: what they must hold, how to make them, and what a failed
install against one means.

An npm lock folder holds `package.json` (the CLI and, for some, the pinned Node, exact versions) and
the `package-lock.json` that `npm install --package-lock-only --ignore-scripts` resolved for it: every
package with its `resolved` URL and `integrity` hash. A PyPI lock folder holds `requirements.txt`:
every package of the resolved set `name==version`, each with the sha256 of every wheel of that version
that CPython 3 on Linux can use (`--require-hashes` refuses anything else; no sdist is listed).
`lock_npm` and `lock_pypi` write them (`harnessrl harness lock`, `scripts/lock_harnesses`), running
the package managers as `install.py` does: unprivileged, minimal environment, no package code.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from harnessrl.harnesses.confine import install_env, reachable, run_as, unprivileged
from harnessrl.images.runtime import runtime_argv, runtime_python
from harnessrl.sandbox.fscopy import remove_tree
from harnessrl.types import HarnessError

NPM_FILES = ("package.json", "package-lock.json")
NPM_STRICT = ("--ignore-scripts", "--no-audit", "--no-fund", "--no-save", "--loglevel=error")
"""How npm installs a lock folder: no package's scripts, nothing written back, no side requests."""
PIP_FILE = "requirements.txt"
PIP_STRICT = ("--require-hashes", "--only-binary=:all:", "--no-deps", "--no-input", "--progress-bar=off")
"""What every pip step of an install is held to: each file hashed in the lockfile, wheels only, and
exactly the lockfile's set (`--no-deps`: no second resolve, where pip 23 stops on a dependency asking
for a locked package with other extras and a range, `pydantic-ai-slim[typesafe]>=2.51` beside
`pydantic-ai-slim==2.51.0`: pypa/pip#9644)."""
LOCK_TIMEOUT_S = 900.0
PYPI_SIMPLE = "https://pypi.org/simple/{name}/"
SIMPLE_JSON = {"Accept": "application/vnd.pypi.simple.v1+json"}
WHEEL_PLATFORMS = ("any", "linux", "manylinux", "musllinux")
"""Wheels of these platform tags are locked (the sandboxes are Linux)."""


def npm_lock(lock: Path) -> dict[str, Any]:
    """The `packages` table of `lock`'s package-lock.json."""
    data = json.loads((lock / "package-lock.json").read_text())
    packages = data.get("packages") if isinstance(data, dict) else None
    if not isinstance(packages, dict):
        raise HarnessError(f"{lock}/package-lock.json has no `packages` table (lockfileVersion 3)")
    return packages


def check_npm_lock(lock: Path) -> None:
    """HarnessError naming the first package of `lock` that has no integrity hash or no URL (npm
    would install such a package unchecked); a bundled package is checked with its parent's tarball."""
    for path, entry in npm_lock(lock).items():
        inside = entry.get("link") or entry.get("inBundle")  # a bundled one is in its parent's tarball
        if path and not inside and not (entry.get("integrity") and entry.get("resolved")):
            raise HarnessError(f"{lock}/package-lock.json: {path} has no integrity hash or no resolved URL")


def check_installed(lock: Path, work: Path) -> None:
    """HarnessError naming the first package npm installed into `work` (its `node_modules/.package-
    lock.json`) that `lock` does not pin at that version and integrity: nothing unlocked gets in."""
    locked = npm_lock(lock)
    try:
        installed = json.loads((work / "node_modules" / ".package-lock.json").read_text())["packages"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise HarnessError(f"npm left no readable node_modules/.package-lock.json in {work}: {e}") from None
    for path, entry in installed.items():
        want = locked.get(path)
        same = want is not None and all(entry.get(k) == want.get(k) for k in ("version", "integrity"))
        if not same and not entry.get("inBundle") and not entry.get("link"):
            name = path.rpartition("node_modules/")[2]
            raise HarnessError(
                f"npm installed {name}@{entry.get('version')} ({entry.get('integrity')}), which the lockfile "
                f"{lock}/package-lock.json does not pin: regenerate it (`scripts/lock_harnesses`) and review"
            )


def check_pip_lock(lock: Path) -> None:
    """HarnessError naming the first requirement of `lock` that is not `name==version` with a hash."""
    for req in _requirements(lock / PIP_FILE):
        if req.startswith("-"):
            continue
        if not re.match(r"^[A-Za-z0-9._-]+==[^\s;]+\s.*--hash=sha256:[0-9a-f]{64}", req):
            raise HarnessError(f"{lock}/{PIP_FILE}: {req.split()[0]!r} is not pinned with a sha256 hash")


def _requirements(path: Path) -> list[str]:
    """The logical lines of a requirements file (continuations joined, comments dropped)."""
    text = re.sub(r"\\\n", " ", path.read_text())
    return [line.split(" #")[0].strip() for line in text.splitlines() if line.strip() and line[0] != "#"]


def npm_failure(lock: Path, stderr: str) -> str:
    """What a failed `npm install` of `lock` means: for an integrity mismatch, the package whose tarball
    the registry served differently from what the lockfile pins."""
    found = re.search(r"wanted (sha\d+-[A-Za-z0-9+/=]+) but got (sha\d+-[A-Za-z0-9+/=]+)", stderr)
    if found:
        wanted, got = found.groups()
        for path, entry in npm_lock(lock).items():
            if wanted in str(entry.get("integrity", "")).split():
                name = path.rpartition("node_modules/")[2]
                return (
                    f"{name}@{entry.get('version')} does not match the lockfile {lock}/package-lock.json: "
                    f"the registry served a tarball with {got}, the lockfile pins {wanted}"
                )
    return f"npm install of {lock} failed: {stderr.strip()[-2000:]}"


def pip_failure(lock: Path, stderr: str) -> str:
    """What a failed `pip download` of `lock` means: for a hash mismatch, the package (and the file)
    the registry served differently from what the lockfile pins."""
    _, sep, tail = stderr.partition("DO NOT MATCH THE HASHES")
    if sep:
        found = re.search(
            r"^\s+(\S+) from (\S+)[^\n]*\n\s+Expected sha256 (\S+)\s*\n\s+Got\s+(\S+)", tail, re.M
        )
        if found:
            req, url, wanted, got = found.groups()
            return (
                f"{req} does not match the lockfile {lock}/{PIP_FILE}: the registry served "
                f"{url.rpartition('/')[2]} with sha256 {got}, the lockfile pins {wanted}"
            )
    return f"pip download of {lock} failed: {stderr.strip()[-2000:]}"


def split_npm_spec(spec: str) -> tuple[str, str]:
    """`@scope/name@1.2.3` -> (`@scope/name`, `1.2.3`)."""
    name, _, version = spec.rpartition("@")
    if not name or not version:
        raise ValueError(f"an npm package spec is name@version, got {spec!r}")
    return name, version


def lock_npm(specs: Sequence[str], out: Path) -> None:
    """Resolve the npm package specs and write `package.json` and `package-lock.json` into `out`."""
    work = Path(tempfile.mkdtemp(prefix="harnessrl-lock-"))
    try:
        deps = dict(split_npm_spec(s) for s in specs)
        manifest = {"name": "harnessrl-harness", "private": True, "dependencies": deps}
        (work / "package.json").write_text(json.dumps(manifest, indent=2) + "\n")
        argv = ["npm", "install", "--package-lock-only", "--ignore-scripts", "--no-audit", "--no-fund"]
        argv += ["--omit-lockfile-registry-resolved=false", "--loglevel=error"]
        with unprivileged(work) as uid:
            env = install_env(work, npm_config_cache=str(work / ".npm"))
            proc = run_as(uid, argv, env=env, cwd=work, timeout_s=LOCK_TIMEOUT_S, what="npm lock")
        if proc.returncode != 0:
            raise HarnessError(f"npm could not lock {' '.join(specs)}: {proc.stderr.strip()[-2000:]}")
        check_npm_lock(work)
        out.mkdir(parents=True, exist_ok=True)
        for name in NPM_FILES:
            shutil.copyfile(work / name, out / name)
    finally:
        remove_tree(work)


def lock_pypi(
    spec: str,
    out: Path,
    interpreter: Interpreter,
    *,
    left_out: Mapping[str, str] | None = None,
    label: str = "",
) -> None:
    """Resolve `spec` (wheels only) on `interpreter` and write `requirements.txt` into `out`: every
    package of the set with the sha256 of each of its Linux wheels on PyPI.

    `left_out`: requirements of `spec`'s own package that are not resolved
    (name -> why; written as comments), its other requirements being resolved without them (an
    install then takes the file as the whole set, `--no-deps`). `label` names the interpreter in the
    file's first line (default: `python`)."""
    work = Path(tempfile.mkdtemp(prefix="harnessrl-lock-"))
    try:
        work.chmod(0o755)
        with unprivileged(work) as uid:
            resolve = _Resolver(uid, work, interpreter)
            chosen, py = resolve.chosen([spec], left_out or {})
        on = label or interpreter.python
        lines = [f"# {spec} for {on}, wheels only: `scripts/lock_harnesses` wrote this file"]
        lines += [f"# left out: {name} ({why})" for name, why in sorted((left_out or {}).items())]
        for item in sorted(chosen, key=lambda i: i["metadata"]["name"].lower()):
            name, version = item["metadata"]["name"], item["metadata"]["version"]
            got = item["download_info"]["archive_info"]["hashes"]["sha256"]
            hashes = sorted({got, *_wheel_hashes(name, version, py)})
            lines.append(f"{name}=={version} \\")
            lines += [f"    --hash=sha256:{h} \\" for h in hashes[:-1]] + [f"    --hash=sha256:{hashes[-1]}"]
        out.mkdir(parents=True, exist_ok=True)
        (out / PIP_FILE).write_text("\n".join(lines) + "\n")
        check_pip_lock(out)
    finally:
        remove_tree(work)


@dataclass(frozen=True)
class Interpreter:
    """The python a PyPI harness is installed with and runs on: the host's (`HOST_PYTHON`, under
    /usr, visible in every sandbox, its venvs made with their own pip), or a runtime's (`runtime`:
    its root, which a sandbox must bind; its venvs are made without pip and filled by the runtime's
    own pip, `pip --python VENV/bin/python`, since Debian's ensurepip looks for its wheels under the
    system's /usr/share)."""

    python: str
    runtime: Path | None = None

    @classmethod
    def of_runtime(cls, root: Path) -> Interpreter:
        return cls(str(runtime_python(root)), root)

    def pip(self, venv: Path) -> list[str]:
        """The command running pip on the venv `venv`."""
        if self.runtime is None:
            return [str(venv / "bin/python"), "-m", "pip"]
        return [self.python, "-m", "pip", "--python", str(venv / "bin/python")]

    def leased(self) -> list[str]:
        """The command that runs this python as a leased uid on the host: a runtime through
        `runtime_argv` at a path that uid can enter (`confine.reachable`: the runtime itself, or its
        staging bind when a folder above it does not let other uids through, as root's home)."""
        if self.runtime is None:
            return [self.python]
        return runtime_argv(reachable(self.runtime))

    def make_venv(self, venv: Path) -> list[str]:
        return [self.python, "-m", "venv", *(["--without-pip"] if self.runtime else []), str(venv)]


class _Resolver:
    """pip's resolver (`install --dry-run --report`) in a fresh venv of `interpreter` under `work`, run
    as `uid` with a minimal environment."""

    def __init__(self, uid: int | None, work: Path, interpreter: Interpreter) -> None:
        self.uid, self.work, self.env = uid, work, install_env(work, PIP_NO_CACHE_DIR="1")
        self.env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
        if interpreter.runtime is not None:
            # its own pip: PEP 668 lets a dry run with a report through, and a venv of it would link
            # to the launcher, which a leased uid cannot run behind a folder closed to it
            self.pip = [*interpreter.leased(), "-m", "pip"]
            return
        venv = work / "venv"
        self._run(interpreter.make_venv(venv), f"making a venv of {interpreter.python}")
        self.pip = interpreter.pip(venv)

    def _run(self, argv: list[str], what: str) -> None:
        proc = run_as(self.uid, argv, env=self.env, cwd=self.work, timeout_s=LOCK_TIMEOUT_S, what=what)
        if proc.returncode != 0:
            raise HarnessError(f"{what} failed: {proc.stderr.strip()[-2000:]}")

    def report(self, reqs: Sequence[str], *flags: str) -> dict[str, Any]:
        """pip's installation report for `reqs` (wheels only, nothing installed)."""
        dry = ["--dry-run", "--ignore-installed", "--only-binary=:all:", "--report", "report.json", *flags]
        self._run([*self.pip, "install", "--quiet", *dry, *reqs], f"resolving {' '.join(reqs)} to wheels")
        return dict(json.loads((self.work / "report.json").read_text()))

    def chosen(self, specs: list[str], left_out: Mapping[str, str]) -> tuple[list[dict[str, Any]], str]:
        """(the packages `specs` resolve to, the python version): with `left_out`, the package of
        `specs[0]` alone, then its requirements but those, resolved."""
        if not left_out:
            report = self.report(specs)
            return list(report["install"]), report["environment"]["python_version"]
        top = self.report(specs, "--no-deps")
        skip = {_normal(n) for n in left_out}
        needs = [r for r in top["install"][0]["metadata"].get("requires_dist", []) if _normal(r) not in skip]
        rest = self.report(needs)["install"] if needs else []
        return [*top["install"], *rest], top["environment"]["python_version"]


def _normal(requirement: str) -> str:
    """The normalised project name a requirement string starts with (PEP 503)."""
    found = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    return re.sub(r"[-_.]+", "-", found.group(1)).lower() if found else ""


def _wheel_hashes(name: str, version: str, python: str) -> list[str]:
    """The sha256 of every wheel of `name` `version` on PyPI (its simple API, PEP 691) that CPython
    `python` ("3.11") on Linux can install."""
    reply = httpx.get(PYPI_SIMPLE.format(name=name), headers=SIMPLE_JSON, timeout=60, follow_redirects=True)
    reply.raise_for_status()
    found = []
    for file in reply.json().get("files", []):
        filename = str(file.get("filename", ""))
        parts = filename.split("-")
        if (
            filename.endswith(".whl")
            and len(parts) >= 5
            and parts[1] == version
            and usable_wheel(filename, python)
        ):
            found.append(str(file["hashes"]["sha256"]))
    return found


def usable_wheel(filename: str, python: str) -> bool:
    """Whether a wheel (by its file name's tags) installs on CPython `python` ("3.11") on Linux."""
    parts = filename.removesuffix(".whl").split("-")
    if len(parts) < 5:
        return False
    pys, abis, plats = (set(tag.split(".")) for tag in parts[-3:])
    minor = int(python.split(".")[1])
    cp = f"cp3{minor}"
    stable = {f"cp3{m}" for m in range(2, minor + 1)} if "abi3" in abis else set()
    ok_py = bool(pys & {"py3", f"py3{minor}", cp} or pys & stable)
    return ok_py and any(p.startswith(WHEEL_PLATFORMS) for p in plats)
