"""Benchmark: rollouts/minute of the asyncio backend vs Ray rollout workers (1 and 2), side by side.

    PYTHONPATH=src .venv/bin/python benchmarks/rollout_scale.py            # ~2 minutes on 2 busy cores
    PYTHONPATH=src .venv/bin/python benchmarks/rollout_scale.py --rollouts 64 --concurrency 4 --sleep 1

Needs the optional extra `harnessrl[ray]`. The same trivial workload for every backend: the `shell`
harness in a real bubblewrap sandbox makes one model call with curl through the sandbox's only way
out (the scripted engine answers "hi there", no model), sleeps `--sleep` seconds (a tool running),
then the task's checker scores the workspace in its own sandbox; artifacts are written as always. The
engine runs in this process for every backend, and so does the proxy of the asyncio backend; each Ray
worker has a proxy process of its own calling the engine through the engine server. The Ray workers
are actors of a local cluster started once (its start-up is printed, not counted). `--concurrency`
rollouts run at once per worker (the asyncio backend is one worker), so Ray with 2 workers runs twice
as many at once: the asyncio backend is also run at that total concurrency, the fair baseline for it.

Prints, per backend: rollouts, workers x concurrency, wall seconds, rollouts/minute, and the rate as a
ratio to the asyncio backend at the same total concurrency. On one machine Ray adds processes and
serialisation and buys no cores; its point is spreading sandboxes over machines.

The last row, `ray 2 nodes` (root with iproute2 only; `--no-two-node` skips it), runs the same
workload on a two-node cluster simulated in network namespaces (`harnessrl.rollout.netsim`): a head
and a worker node, one worker actor on each, the driver (engine, engine server) in the head's
namespace, so half the rollouts' proxy calls the engine across a veth link. One machine, so no
speed-up is expected: its ratio to `ray 2 x c` on a local cluster is the cost of the network hop and
of Ray across nodes per rollout. That arm runs in a child process inside the head's namespace (a
driver must live there); everything else in this one. Left out: real harnesses (seconds of start-up
each), a second disk, network latency.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
import tempfile
import time
from pathlib import Path

from harnessrl.chat.format import ChatFormat
from harnessrl.config import Config
from harnessrl.engines.models import load_tokenizer
from harnessrl.engines.scripted import ScriptedEngine
from harnessrl.rollout.runner import RolloutJob
from harnessrl.rollout.session import RolloutStack
from harnessrl.rollout.testing import checked_task, curl_call

CHECK = """
import json, sys
from pathlib import Path
def grade(transcript, workspace_path):
    return {"score": 1.0 if (Path(workspace_path) / "reply.json").is_file() else 0.0}
if __name__ == "__main__":
    print(json.dumps(grade([], sys.argv[1])))
"""
CURL = curl_call(max_tokens=8)


def make_jobs(n: int, sleep: float) -> list[RolloutJob]:
    task = checked_task("trivial", "say hi", CHECK)
    command = f"{CURL} && sleep {sleep}"
    return [RolloutJob(task, "shell", rollout_id=f"r{i:04d}", options={"command": command}) for i in range(n)]


def make_cfg(out: Path, backend: str, workers: int, concurrency: int, address: str | None = None) -> Config:
    ray = {"workers": workers, "worker_cpus": 0.0}
    if address is not None:  # two nodes: one actor per node (1 CPU each), the engine on the head's link
        ray = {"workers": workers, "worker_cpus": 1.0, "address": address}
    return Config.model_validate(
        {
            "engine": {"type": "scripted", "model": "tiny-qwen3"},
            "rollout": {
                "concurrency": concurrency,
                "timeout_s": 300.0,
                "out_dir": str(out),
                "backend": backend,
                "ray": ray,
            },
        }
    )


def two_node_arm(args: argparse.Namespace, out: Path) -> tuple[float, int] | str:
    """(wall, ok) of the two-node arm, measured by a child inside the head's namespace; or why not."""
    from harnessrl.rollout.netsim import run_in, two_node_cluster, why_not

    reason = why_not()
    if reason is not None:
        return reason
    with two_node_cluster() as nodes:
        argv = [__file__, "--rollouts", str(args.rollouts), "--concurrency", str(args.concurrency)]
        argv += ["--sleep", str(args.sleep), "--arm-at", nodes.address, "--arm-out", str(out)]
        proc = run_in(nodes.head, sys.executable, *argv, env=nodes.env, timeout=1800)
    if proc.returncode != 0:
        return f"two-node arm failed: {proc.stderr[-2000:]}"
    wall, ok = json.loads(proc.stdout.strip().splitlines()[-1])
    return float(wall), int(ok)


async def measure(cfg: Config, jobs: list[RolloutJob]) -> tuple[float, int]:
    """(wall seconds of run_many, ok rollouts); start-up (pools, actors) is not timed."""
    engine = ScriptedEngine(ChatFormat(load_tokenizer("tiny-qwen3")), ["hi there"])
    async with RolloutStack.from_config(cfg, [], engine=engine) as stack:
        assert stack.runner is not None
        await stack.runner.run_many(make_jobs(2, 0.0))  # warm: harness checks, pools, imports
        t0 = time.perf_counter()
        rollouts = await stack.runner.run_many(jobs)
        wall = time.perf_counter() - t0
    bad = [
        f"{r.rollout_id}: {r.status_label} {r.status_reason[-300:]}"
        for r in rollouts
        if r.status_label != "ok"
    ]
    for line in bad:
        print("  not ok:", line)
    return wall, len(rollouts) - len(bad)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rollouts", type=int, default=32, help="rollouts per backend")
    ap.add_argument("--concurrency", type=int, default=4, help="rollouts at once per worker")
    ap.add_argument("--sleep", type=float, default=0.5, help="seconds each rollout's 'tool' runs")
    ap.add_argument("--num-cpus", type=int, default=None, help="CPUs of the local Ray cluster")
    ap.add_argument("--no-two-node", action="store_true", help="skip the simulated two-node row")
    ap.add_argument("--arm-at", help=argparse.SUPPRESS)  # internal: the two-node arm's child
    ap.add_argument("--arm-out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    if args.arm_at:  # the child of two_node_arm, inside the head's namespace: one JSON line out
        cfg = make_cfg(Path(args.arm_out), "ray", 2, args.concurrency, address=args.arm_at)
        print(json.dumps(asyncio.run(measure(cfg, make_jobs(args.rollouts, args.sleep)))))
        return
    import ray

    t0 = time.perf_counter()
    ray.init(num_cpus=args.num_cpus, include_dashboard=False, log_to_driver=False)
    print(f"local Ray cluster started in {time.perf_counter() - t0:.1f} s (not counted)")
    c = args.concurrency
    arms = [("asyncio", 1, c), ("asyncio", 1, 2 * c), ("ray", 1, c), ("ray", 2, c)]
    results: dict[tuple[str, int, int], tuple[float, int]] = {}
    with tempfile.TemporaryDirectory(prefix="rollout-scale-") as tmp:
        try:
            for backend, workers, conc in arms:
                out = Path(tmp) / f"{backend}-{workers}-{conc}"
                jobs = make_jobs(args.rollouts, args.sleep)
                results[(backend, workers, conc)] = asyncio.run(
                    measure(make_cfg(out, backend, workers, conc), jobs)
                )
        finally:
            ray.shutdown()
        two = None if args.no_two_node else two_node_arm(args, Path(tmp) / "two-node")
    print(f"\n{args.rollouts} trivial rollouts each (curl + sleep {args.sleep} s + checker), real sandboxes")
    print(
        f"{'backend':<12}{'workers x conc':>16}{'wall s':>10}{'ok':>6}{'rollouts/min':>15}{'vs asyncio':>12}"
    )
    for (backend, workers, conc), (wall, ok) in results.items():
        rate = 60.0 * args.rollouts / wall
        base_wall, _ = results[("asyncio", 1, workers * conc)]
        ratio = base_wall / wall
        print(f"{backend:<12}{f'{workers} x {conc}':>16}{wall:>10.2f}{ok:>6}{rate:>15.1f}{ratio:>11.2f}x")
    if isinstance(two, tuple):
        wall, ok = two
        rate = 60.0 * args.rollouts / wall
        ratio = results[("asyncio", 1, 2 * c)][0] / wall
        local = results[("ray", 2, c)][0] / wall
        label = "ray 2 nodes"
        print(f"{label:<12}{f'2 x {c}':>16}{wall:>10.2f}{ok:>6}{rate:>15.1f}{ratio:>11.2f}x")
        print(f"ray 2 nodes vs ray 2 workers on one node: {local:.2f}x the rate")
    elif two is not None:
        print(f"ray 2 nodes: not run ({two})")
    print("(vs asyncio = rate / rate of the asyncio backend at the same total concurrency)")


if __name__ == "__main__":
    main()
