"""What a sandbox is made of (SandboxSpec) and what running a command in it gives back (ExecResult)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class SandboxSpec(BaseModel):
    """How to build one sandbox. Runtime object built by the caller (the rollout runner, a pool, a test)."""

    model_config = ConfigDict(frozen=True)

    backend: Literal["bwrap", "local"] = "bwrap"
    """bwrap = bubblewrap isolation; local = no isolation at all (logs a warning on every create)."""
    workspace: Path | None = None
    """Host folder bound read-write as the workspace; None = a fresh empty folder owned by the sandbox."""
    mount_dir: str = "/workspace"
    """Where the workspace appears inside the sandbox (ClawGym tasks use `/root/.openclaw/workspace`)."""
    home_dir: str = "/home/agent"
    """HOME inside the sandbox: a private per-sandbox folder, where harness configs are written."""
    image_root: Path | None = None
    """An unpacked image (`harnessrl.images`: read-only, cached by digest, never changed) used as `/`
    under a writable overlay on the sandbox's tmpfs (`overlay.py`: the agent may change any path,
    nothing reaches the image or the host; `disk_mb` and `max_files` bound what it writes). None =
    the host's system folders, read-only. Needs harnessrl to run as root. The workspace is then the
    image's folder `mount_dir` (made if missing), unless `workspace` binds a host folder there."""
    layers: tuple[Path, ...] = ()
    """With `image_root`: trees copied from earlier sandboxes' writable layers
    (`Sandbox.destroy(keep_layer=...)`), stacked read-only over the image, the first on top: a
    verifier's fresh sandbox over what the agent changed."""
    ro_binds: tuple[Path, ...] = ()
    """Extra host paths bound read-only at the same path (harness installs, a python prefix)."""
    rw_binds: tuple[Path, ...] = ()
    """Extra host paths bound read-write at the same path (a reference script's folder)."""
    ro_mounts: tuple[tuple[Path, str], ...] = ()
    """Host paths bound read-only at another path inside: (host path, inside path) (checker files)."""
    endpoint: tuple[str, int] | None = None
    """Host TCP address (host, port) of the model endpoint; the only address reachable from inside."""
    listen_port: int = 18080
    """Port of the endpoint's listener on the sandbox's own loopback (bwrap backend)."""
    max_connections: int = 32
    """Most connections to the model endpoint open at once from this sandbox; more are closed at once.
    The proxy's own cap (`proxy.max_connections`) is shared by every sandbox, and idle keep-alive
    connections count: without this one sandbox held 1,100 and every other rollout's calls got 503."""
    memory_mb: int | None = 4096
    """Memory cap in MiB (None = unlimited): for the sandbox as a whole where cgroups are available
    (`cgroups.enforced()`), and always as RLIMIT_DATA of each process. RLIMIT_AS is not used: V8 (node)
    reserves tens of GB of address space it never touches and would not start under an AS limit."""
    cpus: float | None = None
    """CPU time per wall-clock second for the sandbox as a whole (a cgroup CPU quota, where this
    machine gives us the `cpu` controller: `cgroups.enforced()`); None = no cap."""
    max_processes: int | None = 512
    """Cap on processes and threads of the sandbox as a whole (cgroup pids.max where available, and
    RLIMIT_NPROC of the sandbox's own uid when harnessrl runs as root); None = no cap."""
    disk_mb: int | None = 2048
    """Size of the sandbox's own tmpfs (its home, /tmp and a pooled workspace), when harnessrl runs
    as root and may mount; None = no tmpfs (plain folders under `base_dir`, no quota). A workspace
    bound from the host (`workspace`) is not on it: only RLIMIT_FSIZE bounds what is written there."""
    max_files: int = 100_000
    """Most files and folders (inodes) on the sandbox's tmpfs."""
    cpu_s: int | None = None
    """RLIMIT_CPU of each command, in CPU seconds (None = unlimited)."""
    bind_python: bool = False
    """Bind the running interpreter's prefixes (venv and base) read-only, for checkers run with it."""
    base_dir: Path | None = None
    """Where sandbox folders are created. None = `$HARNESSRL_SANDBOX_DIR`, else `/dev/shm/harnessrl`
    (`harnessrl-<uid>` for a user other than root) when /dev/shm is writable (RAM-backed: creating and
    removing a sandbox's folders there costs well under a millisecond, against ~25 ms on an ext4 disk
    mounted with `discard`), else the same name in the system temp folder. It must be this uid's and
    writable by nobody else, under folders no other user can change (`folders.ensure_base`)."""
    max_file_mb: int | None = 1024
    """RLIMIT_FSIZE of each command, in MiB: the largest file it may write (None = unlimited). With a
    RAM-backed base_dir this bounds what one runaway write can take; it does not bound the total."""
    agent: Literal["auto", "native", "python"] = "auto"
    """The in-sandbox agent: `native` (`agent.c`, built once per machine by the system C compiler;
    starts ~12 ms sooner), `python` (`_agent.py` on the system python), `auto`:
    `$HARNESSRL_SANDBOX_AGENT` when set, else native where it can be built, else python."""
    start_timeout_s: float = 15.0
    """How long creation may take before it is a SandboxError."""
    path_prefix: tuple[str, ...] = ()
    """Folders (as seen inside) put first on PATH of every command, after its own env is merged
    (the sandbox agent environment's `bin`: `python`, `pytest`)."""
    extra_env: dict[str, str] = Field(default_factory=dict)
    """Environment given to every command (after the defaults, before the command's own)."""
    out_dirs: tuple[str, ...] = ()
    """Empty folders (inside paths) the host makes on the sandbox's tmpfs (their size counts against
    `disk_mb`), writable by the sandbox's user alone, bound read-write there. The host holds a
    descriptor of each from before anything runs (`Sandbox.out_dir`) and reads what was left in it
    once `Sandbox.stop()` has ended every process inside (a Harbor verifier's `/logs/verifier`)."""
    network: bool = False
    """Share the host's network (and its resolv.conf): only for a verifier whose task says it needs
    the network and whose user allowed it (`verify.allow_verifier_network`); never a rollout's."""


@dataclass(frozen=True)
class ExecResult:
    """One command's outcome. `returncode` < 0 is the signal that killed it (subprocess convention)."""

    returncode: int
    stdout: str
    stderr: str
    timed_out: bool
    duration_s: float
    error: str = ""
    """Set when the command could not be started at all (e.g. executable not found; returncode 127)."""


def command_rlimits(spec: SandboxSpec, own_uid: bool, overrides: Mapping[str, int | None]) -> dict[str, int]:
    """setrlimit values for a command of a sandbox of `spec`: the spec's, then `overrides` (None = no
    limit). `own_uid`: the sandbox has a uid of its own, so RLIMIT_NPROC counts its processes alone."""
    limits = {"RLIMIT_CORE": 0}
    if spec.memory_mb is not None:
        limits["RLIMIT_DATA"] = spec.memory_mb * 1024 * 1024
    if spec.cpu_s is not None:
        limits["RLIMIT_CPU"] = spec.cpu_s
    if spec.max_file_mb is not None:
        limits["RLIMIT_FSIZE"] = spec.max_file_mb * 1024 * 1024
    if spec.max_processes is not None and own_uid:
        limits["RLIMIT_NPROC"] = spec.max_processes
    for name, value in overrides.items():
        if value is None:
            limits.pop(name, None)
        else:
            limits[name] = value
    return limits
