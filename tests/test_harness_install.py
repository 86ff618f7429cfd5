"""Harness installs from committed lockfiles, against a real package registry on 127.0.0.1 (npm's
registry protocol and a PEP 503 simple index, served from packages built here) with the real npm and
pip: no package code runs as root or sees the host's environment, a tarball or wheel that does not
match its lockfile fails the install naming the package, sdists are refused, and every lockfile in
the repository pins every package with a hash."""

from __future__ import annotations

import base64
import contextlib
import gzip
import hashlib
import io
import json
import os
import shutil
import signal
import stat
import subprocess
import tarfile
import threading
import zipfile
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from harnessrl.harnesses import HARNESSES, lockfiles
from harnessrl.harnesses.install import LOCKS, MARKER, installed, npm_install, python_install
from harnessrl.sandbox.bwrap import bwrap_path
from harnessrl.types import HarnessError

needs_tools = pytest.mark.skipif(
    bwrap_path() is None or shutil.which("npm") is None, reason="needs bubblewrap and npm"
)
CANARY = "HARNESSRL_TEST_CANARY"
REPORT = f"[process.getuid(), process.env.{CANARY} || 'none', process.env.HOME].join(' ')"
SCRIPT = {"postinstall": f"node -e \"require('fs').writeFileSync('seen.txt', {REPORT})\""}
"""An install script that writes who ran it, whether it saw the canary, and its HOME into its package."""


def tgz(files: dict[str, str]) -> bytes:
    """A reproducible npm tarball (`package/...`, gzip without a timestamp)."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        for path, text in sorted(files.items()):
            info = tarfile.TarInfo(f"package/{path}")
            info.size, info.mode = len(text.encode()), 0o644
            tar.addfile(info, io.BytesIO(text.encode()))
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", mtime=0) as gz:
        gz.write(raw.getvalue())
    return out.getvalue()


class Registry:
    """npm packuments and tarballs, and a simple index of Python files, served on 127.0.0.1."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.packuments: dict[str, dict[str, object]] = {}
        self.hits: list[str] = []
        registry = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                registry.hits.append(self.path)
                body = registry.answer(self.path.split("?")[0])
                self.send_response(404 if body is None else 200)
                kind = "text/html" if self.path.startswith("/simple/") else "application/octet-stream"
                self.send_header("content-type", kind)
                self.send_header("content-length", str(len(body or b"")))
                self.end_headers()
                self.wfile.write(body or b"")

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def answer(self, path: str) -> bytes | None:
        if path in self.files:
            return self.files[path]
        name = path.strip("/").replace("%2f", "/").replace("%2F", "/")
        if name in self.packuments:
            return json.dumps(self.packuments[name]).encode()
        if path.startswith("/simple/"):
            project = path.split("/")[2]
            links = [f'<a href="{p}">{p.rsplit("/", 1)[1]}</a>' for p in self.files if f"/py/{project}-" in p]
            return ("<html><body>" + "".join(links) + "</body></html>").encode() if links else None
        return None

    def npm(
        self, name: str, files: dict[str, str], deps: dict[str, str] | None = None, **meta: object
    ) -> None:
        """Publish `name@1.0.0` with `files`, `deps` and package.json fields `meta` (scripts, bin)."""
        manifest = {"name": name, "version": "1.0.0", "dependencies": deps or {}, **meta}
        data = tgz({"package.json": json.dumps(manifest), **files})
        path = f"/{name}/-/{name}-1.0.0.tgz"
        self.files[path] = data
        integrity = "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()
        dist = {"tarball": self.url + path, "integrity": integrity, "shasum": hashlib.sha1(data).hexdigest()}
        version = {**manifest, "dist": dist}
        self.packuments[name] = {
            "name": name,
            "dist-tags": {"latest": "1.0.0"},
            "versions": {"1.0.0": version},
        }

    def python(self, filename: str, data: bytes) -> str:
        """Serve a wheel or sdist in the simple index; returns its sha256."""
        project = filename.split("-")[0]
        self.files[f"/py/{project}-files/{filename}"] = data
        return hashlib.sha256(data).hexdigest()


@pytest.fixture
def registry() -> Iterator[Registry]:
    reg = Registry()
    yield reg
    reg.server.shutdown()


@pytest.fixture
def cli_lock(registry: Registry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A lock folder for `cli@1.0.0` (a bin) and its dependencies `dep` and `other`, each with an
    install script that reports how it ran; written by `lockfiles.lock_npm` against the registry."""
    registry.npm("dep", {"index.js": "module.exports = 1"}, scripts=SCRIPT)
    registry.npm("other", {"index.js": "module.exports = 2"}, scripts=SCRIPT)
    bin_js = "#!/usr/bin/env node\nconsole.log('cli ran')\n"
    registry.npm("cli", {"bin.js": bin_js}, {"dep": "1.0.0", "other": "1.0.0"}, bin={"cli": "bin.js"})
    monkeypatch.setenv("npm_config_registry", registry.url + "/")
    lock = tmp_path / "lock"
    lockfiles.lock_npm(["cli@1.0.0"], lock)
    return lock


def owned_by_us_and_read_only_to_others(root: Path) -> list[str]:
    """Entries of `root` that are not ours, or that another uid could write or setuid from."""
    bad = []
    for path in [root, *root.rglob("*")]:
        st = os.lstat(path)
        if st.st_uid != os.geteuid() or (not stat.S_ISLNK(st.st_mode) and st.st_mode & 0o7022):
            bad.append(f"{path.relative_to(root)} {stat.filemode(st.st_mode)} uid {st.st_uid}")
    return bad


@needs_tools
@pytest.mark.security
def test_npm_install_runs_install_scripts_only_sandboxed_unprivileged_and_without_host_env(
    cli_lock: Path, registry: Registry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    entries = json.loads((cli_lock / "package-lock.json").read_text())["packages"]
    assert entries["node_modules/dep"]["resolved"] == f"{registry.url}/dep/-/dep-1.0.0.tgz"
    assert entries["node_modules/dep"]["integrity"].startswith("sha512-")
    monkeypatch.setenv(CANARY, "secret-canary")
    target = npm_install(cli_lock, tmp_path / "cache" / "harnesses" / "cli-1", scripts=("dep",))
    uid, canary, home = (target / "node_modules/dep/seen.txt").read_text().split()
    assert (uid != "0", canary, home) == (True, "none", "/home/agent")  # the sandbox's own uid and HOME
    assert not (target / "node_modules/other/seen.txt").exists()  # a script nobody asked for never ran
    assert (target / "node_modules/.bin/cli").resolve() == target / "node_modules/cli/bin.js"
    assert (target / MARKER).is_file()
    assert owned_by_us_and_read_only_to_others(target) == []


@needs_tools
@pytest.mark.security
def test_an_install_script_cannot_make_the_marker_write_through_a_link(
    registry: Registry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An install script (the install folder is bound read-write) plants `<work>/.installed -> a
    host file`: the marker written after sealing must replace the link, not write through it."""
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    victim.chmod(0o600)
    plant = f"node -e \"require('fs').symlinkSync('{victim}', '../../{MARKER}')\""
    registry.npm("evil", {"index.js": ""}, scripts={"install": plant})
    monkeypatch.setenv("npm_config_registry", registry.url + "/")
    lockfiles.lock_npm(["evil@1.0.0"], tmp_path / "lock")
    target = npm_install(tmp_path / "lock", tmp_path / "cache" / "harnesses" / "evil-1", scripts=("evil",))
    assert victim.read_text() == "precious\n"
    st = os.lstat(target / MARKER)
    assert (stat.S_ISREG(st.st_mode), st.st_uid) == (True, os.geteuid())
    assert (target / MARKER).read_text() == "installed\n"


def test_only_a_regular_marker_file_of_ours_says_installed(tmp_path: Path) -> None:
    """A link (even to a real file) or a FIFO at the marker's name is no finished install, and
    looking at a FIFO does not block."""
    (tmp_path / "elsewhere").write_text("installed\n")
    for kind in ("link", "fifo", "folder", "file"):
        (tmp_path / kind).mkdir()
    (tmp_path / "link" / MARKER).symlink_to(tmp_path / "elsewhere")
    os.mkfifo(tmp_path / "fifo" / MARKER)
    (tmp_path / "folder" / MARKER).mkdir()
    (tmp_path / "file" / MARKER).write_text("installed\n")
    assert [k for k in ("link", "fifo", "folder", "file") if installed(tmp_path / k)] == ["file"]


@needs_tools
def test_npm_install_fails_naming_the_package_the_registry_serves_differently(
    cli_lock: Path, registry: Registry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    registry.npm("other", {"index.js": "module.exports = 'tampered'"}, scripts=SCRIPT)
    monkeypatch.setenv("npm_config_fetch_retries", "0")  # npm retries a bad tarball, 2 min by default
    root = tmp_path / "cache" / "harnesses"
    said = r"^other@1\.0\.0 does not match the lockfile .*/lock/package-lock\.json: the registry served a "
    with pytest.raises(HarnessError, match=said + r"tarball with sha512-\S+, the lockfile pins sha512-"):
        npm_install(cli_lock, root / "cli-1")
    assert [p.name for p in root.iterdir()] == ["cli-1.lock"]  # nothing half-installed


@needs_tools
def test_npm_install_once_under_concurrency(cli_lock: Path, registry: Registry, tmp_path: Path) -> None:
    target = tmp_path / "cache" / "harnesses" / "cli-1"
    results: list[Path] = []
    threads = [
        threading.Thread(target=lambda: results.append(npm_install(cli_lock, target))) for _ in range(4)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [target] * 4
    assert sorted(h for h in registry.hits if h.endswith(".tgz")) == [
        "/cli/-/cli-1.0.0.tgz", "/dep/-/dep-1.0.0.tgz", "/other/-/other-1.0.0.tgz",
    ]  # fmt: skip


def test_a_lockfile_entry_without_integrity_is_refused(tmp_path: Path) -> None:
    lock = tmp_path / "lock"
    lock.mkdir()
    (lock / "package.json").write_text('{"dependencies": {"a": "1.0.0"}}')
    packages = {"": {}, "node_modules/a": {"version": "1.0.0", "resolved": "http://127.0.0.1:1/a.tgz"}}
    (lock / "package-lock.json").write_text(json.dumps({"lockfileVersion": 3, "packages": packages}))
    with pytest.raises(HarnessError, match=r"package-lock\.json: node_modules/a has no integrity hash"):
        npm_install(lock, tmp_path / "cache" / "a-1")
    (lock / "requirements.txt").write_text("tinypkg==1.0\n")
    with pytest.raises(HarnessError, match=r"requirements\.txt: 'tinypkg==1\.0' is not pinned with a sha256"):
        python_install(lock, tmp_path / "cache" / "p-1")


def test_what_npm_installed_must_be_pinned_by_the_lockfile(tmp_path: Path) -> None:
    lock, work = tmp_path / "lock", tmp_path / "work"
    (work / "node_modules").mkdir(parents=True)
    lock.mkdir()
    pinned = {"version": "1.0.0", "resolved": "http://127.0.0.1:1/a.tgz", "integrity": "sha512-AAAA"}
    (lock / "package-lock.json").write_text(json.dumps({"packages": {"": {}, "node_modules/a": pinned}}))
    hidden = work / "node_modules" / ".package-lock.json"
    hidden.write_text(json.dumps({"packages": {"node_modules/a": pinned}}))
    lockfiles.check_installed(lock, work)
    for extra, said in [
        ({"node_modules/a": {**pinned, "integrity": "sha512-BBBB"}}, r"a@1\.0\.0 \(sha512-BBBB\)"),
        ({"node_modules/a": pinned, "node_modules/b": {"version": "2.0.0"}}, r"b@2\.0\.0 \(None\)"),
    ]:
        hidden.write_text(json.dumps({"packages": extra}))
        with pytest.raises(HarnessError, match=rf"^npm installed {said}, which the lockfile .* does not pin"):
            lockfiles.check_installed(lock, work)


def wheel(name: str, version: str, module: str) -> tuple[str, bytes]:
    """A minimal pure-Python wheel: `name` with one module printing nothing, `VALUE = module`."""
    dist = f"{name}-{version}.dist-info"
    files = {
        f"{name}/__init__.py": f"VALUE = {module!r}\n",
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{dist}/WHEEL": "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = [f"{p},sha256={b64_sha256(t.encode())},{len(t.encode())}" for p, t in files.items()]
    files[f"{dist}/RECORD"] = "\n".join([*record, f"{dist}/RECORD,,"]) + "\n"
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        for path, text in files.items():
            zf.writestr(path, text)
    return f"{name}-{version}-py3-none-any.whl", out.getvalue()


def b64_sha256(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def pip_lock(tmp_path: Path, registry: Registry, pins: str) -> Path:
    lock = tmp_path / "pylock"
    lock.mkdir(exist_ok=True)
    (lock / "requirements.txt").write_text(f"--index-url {registry.url}/simple/\n{pins}\n")
    return lock


@needs_tools
def test_python_install_from_hashed_wheels_into_a_sealed_venv(registry: Registry, tmp_path: Path) -> None:
    digest = registry.python(*wheel("tinypkg", "1.0", "installed"))
    lock = pip_lock(tmp_path, registry, f"tinypkg==1.0 --hash=sha256:{digest}")
    venv = python_install(lock, tmp_path / "cache" / "harnesses" / "tiny-1")
    argv = [venv / "bin/python", "-c", "import tinypkg; print(tinypkg.VALUE)"]
    out = subprocess.run(argv, capture_output=True, text=True, check=False)
    assert out.stdout == "installed\n", out.stderr
    assert owned_by_us_and_read_only_to_others(venv) == []
    mounts = [line.split()[3] for line in Path("/proc/self/mountinfo").read_text().splitlines()]
    assert [m for m in mounts if ".tiny-1.wheels-" in m] == []  # no bind of the removed wheels is left


@needs_tools
def test_python_install_fails_naming_a_wheel_whose_hash_does_not_match(
    registry: Registry, tmp_path: Path
) -> None:
    digest = registry.python(*wheel("tinypkg", "1.0", "tampered"))
    lock = pip_lock(tmp_path, registry, f"tinypkg==1.0 --hash=sha256:{'0' * 64}")
    root = tmp_path / "cache" / "harnesses"
    said = r"^tinypkg==1\.0 does not match the lockfile .*/pylock/requirements\.txt: the registry served "
    said += rf"tinypkg-1\.0-py3-none-any\.whl with sha256 {digest}, the lockfile pins 0{{64}}$"
    with pytest.raises(HarnessError, match=said):
        python_install(lock, root / "tiny-1")
    assert sorted(p.name for p in root.iterdir()) == ["tiny-1.lock"]


@needs_tools
@pytest.mark.security
def test_python_install_refuses_an_sdist_and_never_runs_its_setup(registry: Registry, tmp_path: Path) -> None:
    canary = tmp_path / "setup-ran"
    setup = f"open({str(canary)!r}, 'w').write('ran')\nimport setuptools\nsetuptools.setup(name='evil')\n"
    sdist = io.BytesIO()
    with tarfile.open(fileobj=sdist, mode="w:gz") as tar:
        for path, text in {
            "evil-1.0/setup.py": setup,
            "evil-1.0/PKG-INFO": "Metadata-Version: 2.1\nName: evil\nVersion: 1.0\n",
        }.items():
            info = tarfile.TarInfo(path)
            info.size = len(text.encode())
            tar.addfile(info, io.BytesIO(text.encode()))
    digest = registry.python("evil-1.0.tar.gz", sdist.getvalue())
    lock = pip_lock(tmp_path, registry, f"evil==1.0 --hash=sha256:{digest}")
    with pytest.raises(
        HarnessError, match=r"(?s)pip download of .* failed: .*No matching distribution found for evil==1\.0"
    ):
        python_install(lock, tmp_path / "cache" / "evil-1")
    assert not canary.exists()


@pytest.mark.parametrize("name", [n for n, h in HARNESSES.items() if h.installer in ("npm", "pypi")])
def test_every_registry_harness_has_a_lockfile_pinning_its_package(name: str) -> None:
    harness = HARNESSES[name]
    lock = LOCKS / name
    if harness.installer == "npm":
        lockfiles.check_npm_lock(lock)
        deps = json.loads((lock / "package.json").read_text())["dependencies"]
        assert deps == dict(lockfiles.split_npm_spec(s) for s in harness.npm_specs)  # type: ignore[attr-defined]
        top = lockfiles.npm_lock(lock)[f"node_modules/{lockfiles.split_npm_spec(harness.package)[0]}"]
        assert top["version"] == harness.version
    else:
        lockfiles.check_pip_lock(lock)
        assert f"\n{harness.package} \\\n" in (lock / "requirements.txt").read_text()


def test_a_program_that_cannot_start_is_a_harness_error_naming_it(tmp_path: Path) -> None:
    from harnessrl.harnesses.confine import run_as

    said = r"^npm lock: cannot run /nonexistent/npm \(No such file or directory\)$"
    with pytest.raises(HarnessError, match=said):
        run_as(None, ["/nonexistent/npm"], env={}, cwd=tmp_path, timeout_s=5, what="npm lock")


def running(pid: int) -> bool:
    """Whether `pid` exists and is no zombie."""
    try:
        state = next(x for x in Path(f"/proc/{pid}/status").read_text().splitlines() if x.startswith("State"))
    except FileNotFoundError:
        return False
    return state.split()[1] not in ("Z", "X")


@pytest.mark.skipif(os.geteuid() != 0, reason="uid leases need root")
def test_nothing_of_an_install_step_outlives_its_lease(tmp_path: Path) -> None:
    """A child that leaves run_as's process group (setsid) survived its killpg and ran on as the
    leased uid after the lease ended, which the next lease may hand to a sandbox: the lease now ends
    only once every process of its uid is dead."""
    from harnessrl.harnesses.confine import install_env, run_as, unprivileged

    work = tmp_path / "work"
    work.mkdir(mode=0o755)
    tmp_path.chmod(0o755)
    detach = "setsid sleep 120 </dev/null >/dev/null 2>&1 & sleep 0.2; echo $!"
    with unprivileged(work) as uid:
        assert uid is not None
        out = run_as(uid, ["sh", "-c", detach], env=install_env(work), cwd=work, timeout_s=30, what="step")
        child = int(out.stdout)
        assert running(child)  # it did leave the group and survive the killpg
    try:
        assert not running(child)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, signal.SIGKILL)
