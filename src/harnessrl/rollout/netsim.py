"""Two Ray nodes on one machine that are apart on the network, for the multi-node test and benchmark.

    with two_node_cluster() as nodes:          # root only; `ip` from iproute2; harnessrl[ray]
        run_in(nodes.head, sys.executable, "driver.py")   # the driver: proxy, engine, trainer

Each node lives in a network namespace of its own (`hrl-head-<tag>`, `hrl-work-<tag>`), joined by one
veth link with private addresses (HEAD_IP, WORKER_IP) and nothing else: no route leaves the pair,
so the worker node's sandboxes reach the driver's proxy only across the link, as from another
machine. The Ray head (`ray start --head`, GCS on HEAD_IP:6379) runs in the first namespace, a worker
node (`ray start --address`) in the second, one CPU each, with a temp dir of their own (so no
`/tmp/ray/ray_current_cluster` is left for other Ray users of the machine) and Ray's token
authentication on, with a token of its own (`Nodes.env`: `RAY_AUTH_MODE=token`, `RAY_AUTH_TOKEN_PATH`
to a 0600 file in the temp dir; Ray >= 2.60 otherwise takes `~/.ray/auth_token`, which a local
`ray.init()` writes, on the head but not on a joining node). Teardown SIGKILLs every process in both
namespaces (`ray stop` would stop every Ray on the machine) and deletes them.

What it does not simulate: a second filesystem (both nodes see one disk, so `rollout.out_dir` is
shared by construction), packet loss or latency, or a second kernel.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

HEAD_IP, WORKER_IP = "10.231.0.1", "10.231.0.2"
RAY_PORT = 6379
RAY_ENV = {
    "RAY_USAGE_STATS_ENABLED": "0",
    # A dead node is noticed within ~2 s instead of ~30 s (the GCS's health checks of each raylet).
    "RAY_health_check_initial_delay_ms": "1000",
    "RAY_health_check_period_ms": "500",
    "RAY_health_check_timeout_ms": "1000",
    "RAY_health_check_failure_threshold": "3",
}


def ray_cli() -> Path:
    """The `ray` command of this interpreter's environment."""
    return Path(sys.executable).with_name("ray")


def why_not() -> str | None:
    """Why this machine cannot simulate two nodes, or None when it can."""
    if os.geteuid() != 0:
        return "needs root: it makes network namespaces and a veth link"
    if shutil.which("ip") is None:
        return "needs `ip` (iproute2) for network namespaces"
    if shutil.which("bwrap") is None:
        return "bubblewrap not installed"
    if not ray_cli().is_file():
        return "Ray is not installed (harnessrl[ray]; scripts/setup installs it)"
    return None


@dataclass(frozen=True)
class Nodes:
    head: str
    """Network namespace of the head node (and of the driver, run there with `run_in`)."""
    worker: str
    """Network namespace of the worker node."""
    temp_dir: str
    """Ray's temp dir for both nodes (and the cluster's auth token file)."""

    @property
    def env(self) -> dict[str, str]:
        """RAY_ENV plus this cluster's token authentication: for `ray start` and for the driver."""
        token = str(Path(self.temp_dir) / "auth_token")
        return {**RAY_ENV, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": token}

    @property
    def address(self) -> str:
        """The cluster's address for `rollout.ray.address`."""
        return f"{HEAD_IP}:{RAY_PORT}"


def run_in(
    ns: str, *argv: str, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """Run a command inside a namespace with `env` (default RAY_ENV) added, capturing its output."""
    env = {**os.environ, **(RAY_ENV if env is None else env)}
    return subprocess.run(
        ["ip", "netns", "exec", ns, *argv], env=env, capture_output=True, text=True, timeout=timeout
    )


def pids_in(ns: str) -> list[int]:
    out = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout
    return [int(p) for p in out.split() if p.isdigit()]


def kill_raylet(ns: str) -> int:
    """SIGKILL the raylet of the node in namespace `ns`; returns its pid."""
    for pid in pids_in(ns):
        with contextlib.suppress(OSError):
            if Path(f"/proc/{pid}/comm").read_text().strip() == "raylet":
                os.kill(pid, signal.SIGKILL)
                return pid
    raise RuntimeError(f"no raylet in network namespace {ns}")


def _kill_all(ns: str) -> None:
    for _ in range(5):
        pids = pids_in(ns)
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.3)


@contextlib.contextmanager
def namespaces() -> Iterator[Nodes]:
    """The two namespaces and their link (no Ray yet); everything in them is killed on exit."""
    tag = str(os.getpid() % 100_000)
    head, worker = f"hrl-head-{tag}", f"hrl-work-{tag}"
    veth_h, veth_w = f"hrlh{tag}", f"hrlw{tag}"
    temp_dir = tempfile.mkdtemp(prefix="hrl-ray-", dir="/tmp")
    steps = [
        ["ip", "netns", "add", head],
        ["ip", "netns", "add", worker],
        ["ip", "link", "add", veth_h, "type", "veth", "peer", "name", veth_w],
        ["ip", "link", "set", veth_h, "netns", head],
        ["ip", "link", "set", veth_w, "netns", worker],
        ["ip", "-n", head, "addr", "add", f"{HEAD_IP}/24", "dev", veth_h],
        ["ip", "-n", worker, "addr", "add", f"{WORKER_IP}/24", "dev", veth_w],
        ["ip", "-n", head, "link", "set", veth_h, "up"],
        ["ip", "-n", worker, "link", "set", veth_w, "up"],
        ["ip", "-n", head, "link", "set", "lo", "up"],
        ["ip", "-n", worker, "link", "set", "lo", "up"],
    ]
    try:
        for argv in steps:
            subprocess.run(argv, check=True, capture_output=True, text=True, timeout=30)
        token = Path(temp_dir) / "auth_token"
        token.write_text(secrets.token_hex(32))
        token.chmod(0o600)
        yield Nodes(head, worker, temp_dir)
    finally:
        for ns in (worker, head):
            _kill_all(ns)
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)  # its veth end goes too
        shutil.rmtree(temp_dir, ignore_errors=True)


@contextlib.contextmanager
def two_node_cluster(cpus_per_node: int = 1) -> Iterator[Nodes]:
    """A Ray head and one worker node, each in its namespace (module docstring)."""
    reason = why_not()
    if reason is not None:
        raise RuntimeError(f"cannot simulate two nodes here: {reason}")
    ray = str(ray_cli())
    with namespaces() as nodes:
        common = [f"--num-cpus={cpus_per_node}", "--disable-usage-stats", f"--temp-dir={nodes.temp_dir}"]
        started = run_in(
            nodes.head, ray, "start", "--head", f"--node-ip-address={HEAD_IP}", f"--port={RAY_PORT}",
            "--include-dashboard=false", *common, env=nodes.env,
        )  # fmt: skip
        if started.returncode != 0:
            raise RuntimeError(f"ray head did not start: {started.stdout}{started.stderr}")
        joined = run_in(
            nodes.worker,
            ray,
            "start",
            f"--address={nodes.address}",
            f"--node-ip-address={WORKER_IP}",
            *common,
            env=nodes.env,
        )
        if joined.returncode != 0:
            raise RuntimeError(f"ray worker node did not join: {joined.stdout}{joined.stderr}")
        yield nodes
