"""Benchmark: what bubblewrap isolation costs per rollout, against plain subprocesses, side by side.

    .venv/bin/python benchmarks/sandbox.py                  # ~1 minute on two busy cores
    .venv/bin/python benchmarks/sandbox.py --rollouts 32 --concurrency 1 8

A trivial rollout = a fresh workspace + the `shell` harness writing hello.txt + teardown. Three ways:
- `subprocess`: baseline, no isolation: mkdtemp, `sh -c` in its own session, rmtree;
- `sandbox`: Sandbox.create (folders, bwrap, in-sandbox agent) + exec + destroy, with the native
  agent (`agent.c`, the default where a C compiler is); `sandbox, py` the same with `_agent.py`
  (what runs without a compiler, and what every sandbox ran before the native agent);
- `pool`: a SandboxPool of `concurrency` prewarmed sandboxes (what the rollout runner uses by
  default): acquire + exec + destroy. Creation is paid in the background, but trivial rollouts run
  back to back finish faster than a sandbox starts (~20 ms), so the pool is mostly empty and each
  acquire queues for the next sandbox made: the pool's worst case, the one it must not lose. The
  pool runs at most twice the CPU count of creations at once and serves queued callers first come,
  first served;
- `pool, 1 per core` (concurrency > 1): the same with `max_creating` = the CPU count, the default
  before 2026-12-03 (a creation also waits, so one per core left cores idle);
- `pool, all at once` (concurrency > 1): the same with `max_creating = concurrency`: every refill
  started at once, as the pool did before (which also woke every waiting caller on each creation,
  where this row serves them in order; issue 23 measured it at 4,486 / 5,396 rollouts/min against
  fresh 5,491 / 5,793 at 8, 3,476 / 3,881 against 4,415 / 5,249 at 32);
- `pool, full` (concurrency 1): the same, but each rollout starts once the pool has refilled (the
  wait is not timed), as it always has with real rollouts, which last seconds: the isolation cost
  that a rollout's latency actually carries. Its rate is not shown (the waits are in its wall time).
- `image root vs host root`: a sandbox whose `/` is an unpacked image under an overlay
  (`SandboxSpec.image_root`) against the host root: create + destroy and trivial rollouts, ratios;
  and what the image cost once: the base image from Debian packages, the Dockerfile build, the
  unpack (`--image-build` times them from scratch in a temporary cache; `--only-images`).
Prints per-rollout latency p50/p99 and rollouts/minute at each concurrency, the isolation cost
(p50 minus the baseline's p50; goal <= 15 ms at concurrency 1), the rate of every sandbox row against
fresh sandboxes (`rate/fresh`; goal for the pool: >= 1 at every concurrency), and the endpoint
bridge's overhead per HTTP request
and on a 16 MiB download (inside client -> agent -> unix socket -> host forwarder -> TCP server,
against the same client run on the host). Left out: real harnesses (their own start-up, seconds,
dwarfs all of this) and memory use.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from harnessrl.images import ImageReport, ImageRoot, ImageSpec, missing_tools, provide_image
from harnessrl.sandbox import Sandbox, SandboxPool, SandboxSpec
from harnessrl.sandbox.bwrap import agent_python
from harnessrl.sandbox.folders import default_base_dir

COMMAND = "printf hi > hello.txt"
CLIENT = """
import http.client, sys, time
host, port, n, big = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
t = time.perf_counter()
for _ in range(n):
    c = http.client.HTTPConnection(host, port); c.request("GET", "/small"); c.getresponse().read(); c.close()
small = (time.perf_counter() - t) / n
t = time.perf_counter()
c = http.client.HTTPConnection(host, port); c.request("GET", "/big"); got = len(c.getresponse().read())
assert got == big, got
print(small, time.perf_counter() - t)
"""


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(q * (len(xs) - 1)))]


async def baseline_rollout(base: Path) -> None:
    ws = Path(tempfile.mkdtemp(dir=base))
    proc = await asyncio.create_subprocess_exec("sh", "-c", COMMAND, cwd=ws, start_new_session=True)
    assert await proc.wait() == 0
    assert (ws / "hello.txt").read_text() == "hi"
    shutil.rmtree(ws)


async def sandbox_rollout(sb: Sandbox) -> None:
    try:
        res = await sb.exec(["sh", "-c", COMMAND], timeout_s=30)
        assert res.returncode == 0 and (sb.host_workspace / "hello.txt").read_text() == "hi", res
    finally:
        await sb.destroy()


async def measure(
    n: int,
    conc: int,
    one: Callable[[], Awaitable[None]],
    before: Callable[[], Awaitable[None]] | None = None,
) -> tuple[list[float], float]:
    """Run `n` rollouts, `conc` at a time; return per-rollout latencies and total wall time.
    `before` runs ahead of each rollout, untimed."""
    sem = asyncio.Semaphore(conc)
    lat: list[float] = []

    async def timed() -> None:
        async with sem:
            if before is not None:
                await before()
            t = time.perf_counter()
            await one()
            lat.append(time.perf_counter() - t)

    start = time.perf_counter()
    await asyncio.gather(*(timed() for _ in range(n)))
    return lat, time.perf_counter() - start


async def rollouts(n: int, concurrencies: list[int], base: Path) -> None:
    spec = SandboxSpec(base_dir=base, agent="native")
    py_spec = SandboxSpec(base_dir=base, agent="python")
    print(f"\n{n} trivial rollouts per row (`{COMMAND}`), latency per rollout in ms")
    print(
        f"{'conc':>4} {'mode':<18} {'p50':>8} {'p99':>8} {'per min':>9} {'p50 - base':>11} {'rate/base':>9}"
        f" {'rate/fresh':>10}"
    )
    for conc in concurrencies:
        rows: dict[str, tuple[list[float], float]] = {}
        rows["subprocess"] = await measure(n, conc, lambda: baseline_rollout(base))
        rows["sandbox"] = await measure(n, conc, lambda: _fresh(spec))
        rows["sandbox, py"] = await measure(n, conc, lambda: _fresh(py_spec))
        async with SandboxPool(spec, size=conc) as pool:
            rows["pool"] = await measure(n, conc, lambda: _pooled(pool))
            if conc == 1:
                rows["pool, full"] = await measure(n, conc, lambda: _pooled(pool), lambda: _full(pool))
        if conc > 1:
            async with SandboxPool(spec, size=conc, max_creating=os.cpu_count() or 1) as pool:
                rows["pool, 1 per core"] = await measure(n, conc, lambda: _pooled(pool))
            async with SandboxPool(spec, size=conc, max_creating=conc) as pool:
                rows["pool, all at once"] = await measure(n, conc, lambda: _pooled(pool))
        base_p50, base_rate = statistics.median(rows["subprocess"][0]), n / rows["subprocess"][1] * 60
        fresh_rate = n / rows["sandbox"][1] * 60
        for mode, (lat, wall) in rows.items():
            p50, rate = statistics.median(lat), n / wall * 60
            cost = f"{(p50 - base_p50) * 1e3:+.1f}" if mode != "subprocess" else ""
            paced = mode == "pool, full"  # its wall time includes the untimed waits: no rate
            per_min, ratio = ("-", "-") if paced else (f"{rate:.0f}", f"{rate / base_rate:.2f}")
            vs_fresh = "-" if paced or mode == "subprocess" else f"{rate / fresh_rate:.2f}"
            print(
                f"{conc:>4} {mode:<18} {p50 * 1e3:>8.1f} {pct(lat, 0.99) * 1e3:>8.1f} "
                f"{per_min:>9} {cost:>11} {ratio:>9} {vs_fresh:>10}"
            )


async def _fresh(spec: SandboxSpec) -> None:
    await sandbox_rollout(await Sandbox.create(spec))


async def _pooled(pool: SandboxPool) -> None:
    await sandbox_rollout(await pool.acquire())


async def _full(pool: SandboxPool) -> None:
    """Wait until the pool has refilled: what a real rollout (seconds of harness) always finds."""
    while pool.idle < pool.size and pool.refilling:  # a failed prewarm is not retried by itself
        await asyncio.sleep(0.002)


async def create_destroy(n: int, base: Path) -> None:
    print(f"\nsandbox create + destroy, {n} sequential, ms")
    for backend, agent in (("bwrap", "native"), ("bwrap", "python"), ("local", "native")):
        spec = SandboxSpec(base_dir=base, backend=backend, agent=agent)
        lat = []
        for _ in range(n):
            t = time.perf_counter()
            sb = await Sandbox.create(spec)
            await sb.destroy()
            lat.append(time.perf_counter() - t)
        name = f"{backend}, {agent} agent"
        print(f"  {name:<20} p50 {statistics.median(lat) * 1e3:7.1f}   p99 {pct(lat, 0.99) * 1e3:7.1f}")


IMAGE_CONTEXT = (
    Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "images" / "apt-package" / "environment"
)


def image_once(fresh: bool) -> ImageRoot:
    """The test image (the base image from Debian packages + GNU hello), found in (or made once into)
    the cache; with `fresh`, first built and unpacked from scratch in a temporary cache, timed."""
    spec = ImageSpec(context=IMAGE_CONTEXT, task="bench")
    if fresh:
        old, scratch = (
            os.environ.get("HARNESSRL_CACHE"),
            tempfile.mkdtemp(prefix="hrl-bench-", dir="/var/tmp"),
        )
        os.environ["HARNESSRL_CACHE"] = scratch
        try:
            _print_image(provide_image(spec), "from scratch")
        finally:
            os.environ.pop("HARNESSRL_CACHE")
            if old is not None:
                os.environ["HARNESSRL_CACHE"] = old
            shutil.rmtree(scratch, ignore_errors=True)
    report = provide_image(spec)
    _print_image(report, "from the cache (0.0 = found, not made; --image-build times it from scratch)")
    return report.root


def _print_image(report: ImageReport, how: str) -> None:
    root = report.root
    print(f"\nimage {root.ref} ({root.bytes / 2**20:.0f} MiB unpacked), {how}")
    print(f"  base image (mmdebstrap | podman import), once per machine:  {report.base_s:6.1f} s")
    print(f"  Dockerfile build (buildah, one apt package), once per context: {report.build_s:6.1f} s")
    print(f"  unpack (podman image mount + cp -a), once per image digest:  {report.unpack_s:6.1f} s")


async def image_vs_host(n: int, concurrencies: list[int], base: Path, root: ImageRoot) -> None:
    """Sandbox start with an image root against the host root: create + destroy, and trivial
    rollouts, both with the native agent; ratios image / host."""
    host = SandboxSpec(base_dir=base, agent="native")
    image = SandboxSpec(base_dir=base, agent="native", image_root=root.path, mount_dir="/app")
    print("\nimage root vs host root (native agent)")
    lat = {}
    for name, spec in (("host", host), ("image", image)):
        lat[name], _ = await measure(n, 1, lambda spec=spec: _create_destroy(spec))  # type: ignore[misc]
    h, i = statistics.median(lat["host"]), statistics.median(lat["image"])
    print(f"  create + destroy p50: host {h * 1e3:.1f} ms, image {i * 1e3:.1f} ms, image/host {i / h:.2f}")
    for conc in concurrencies:
        rates = {}
        for name, spec in (("host", host), ("image", image)):
            lats, wall = await measure(n, conc, lambda spec=spec: _fresh(spec))  # type: ignore[misc]
            rates[name] = (statistics.median(lats), n / wall * 60)
        (hp, hr), (ip, ir) = rates["host"], rates["image"]
        print(
            f"  trivial rollout at {conc:>2}: p50 host {hp * 1e3:.1f} / image {ip * 1e3:.1f} ms, "
            f"per min host {hr:.0f} / image {ir:.0f}, rate image/host {ir / hr:.2f}"
        )


async def _create_destroy(spec: SandboxSpec) -> None:
    await (await Sandbox.create(spec)).destroy()


async def bridge(n: int, base: Path) -> None:
    big = 16 * 1024 * 1024
    payload = b"x" * big

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        line = (await reader.readuntil(b"\r\n\r\n")).split(b" ")[1]
        body = payload if line == b"/big" else b"ok"
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        direct = await asyncio.to_thread(
            subprocess.run,
            [sys.executable, "-c", CLIENT, "127.0.0.1", str(port), str(n), str(big)],
            capture_output=True,
            text=True,
            check=True,
        )
        d_small, d_big = map(float, direct.stdout.split())
        async with await Sandbox.create(SandboxSpec(base_dir=base, endpoint=("127.0.0.1", port))) as sb:
            res = await sb.exec(
                ["python3", "-c", CLIENT, "127.0.0.1", "18080", str(n), str(big)], timeout_s=120
            )
            assert res.returncode == 0, res.stderr
            b_small, b_big = map(float, res.stdout.split())
    print(f"\nendpoint bridge, {n} requests (new connection each) and one 16 MiB response")
    print(f"  per request: direct {d_small * 1e3:.2f} ms, bridged {b_small * 1e3:.2f} ms")
    print(f"  16 MiB:      direct {big / d_big / 2**20:.0f} MiB/s, bridged {big / b_big / 2**20:.0f} MiB/s")


def floors(n: int) -> None:
    """What the machine gives right now: the unavoidable parts of a sandbox, timed bare."""
    python, _ = agent_python()
    probes = {
        "/bin/true": ["/bin/true"],
        "bwrap --unshare-all /bin/true": [
            *(
                "bwrap",
                "--ro-bind",
                "/usr",
                "/usr",
                "--symlink",
                "usr/bin",
                "/bin",
                "--symlink",
                "usr/lib",
                "/lib",
            ),
            *(
                "--symlink",
                "usr/lib64",
                "/lib64",
                "--proc",
                "/proc",
                "--dev",
                "/dev",
                "--unshare-all",
                "/bin/true",
            ),
        ],
        "python3 -I -S -c pass": [python, "-I", "-S", "-c", "pass"],
    }
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; floors (p50 of {n}, ms):")
    for name, argv in probes.items():
        lat = []
        for _ in range(n):
            t = time.perf_counter()
            subprocess.run(argv, check=True)
            lat.append(time.perf_counter() - t)
        print(f"  {name:<32} {statistics.median(lat) * 1e3:7.1f}")


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rollouts", type=int, default=64, help="rollouts per (concurrency, mode) row")
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32])
    ap.add_argument("--create", type=int, default=30, help="sequential create+destroy samples")
    ap.add_argument("--requests", type=int, default=200, help="HTTP requests for the bridge test")
    ap.add_argument("--images", action=argparse.BooleanOptionalAction, default=True, help="image root rows")
    ap.add_argument(
        "--image-build", action="store_true", help="time the image's build and unpack from scratch"
    )
    ap.add_argument("--only-images", action="store_true", help="only the image rows")
    args = ap.parse_args()
    logging.getLogger("harnessrl.sandbox.sandbox").setLevel(logging.ERROR)  # the local backend's warning
    # Both sides work in the sandboxes' default folder (/dev/shm when writable), so the baseline pays
    # the same filesystem costs.
    root = default_base_dir()
    root.mkdir(parents=True, exist_ok=True)
    base = Path(tempfile.mkdtemp(prefix="hrl-bench-", dir=root))
    base.chmod(0o711)  # sandboxes run as their own uids: they must be able to enter it
    try:
        if not args.only_images:
            floors(args.create)
            await create_destroy(args.create, base)
            await rollouts(args.rollouts, args.concurrency, base)
            await bridge(args.requests, base)
        if args.images or args.only_images:
            missing = missing_tools()
            if missing or os.geteuid() != 0:
                print(f"\nimage rows skipped: {'; '.join(missing) or 'image sandboxes need root'}")
            else:
                root = await asyncio.to_thread(image_once, args.image_build)
                await image_vs_host(args.create, args.concurrency, base, root)
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    asyncio.run(main())
