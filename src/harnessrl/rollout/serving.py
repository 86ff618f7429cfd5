"""Backends whose sessions live in proxy processes: the driver serves its engine over HTTP, and either Ray
workers (one proxy process each, on their machines) or `proxy.processes` local proxy processes call it.

    if remote_sessions(cfg.rollout, cfg.proxy):
        server, runner = await start_remote(engine, cfg.rollout, cfg.proxy, cfg.engine.sampling, settings)

Where the engine server listens (`engine_address`): 127.0.0.1 when every proxy process is on this
machine (the asyncio backend, a local Ray cluster); with Ray on an existing cluster, this node's
address on the cluster's network (what Ray itself uses: the private interface), unless
`proxy.engine_host` says otherwise. Every request must carry the server's token, 32 random bytes
made per run and handed to the proxy processes with their spec; a request without it gets 401.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harnessrl.engines.config import SamplingConfig
from harnessrl.engines.serve import EngineServer
from harnessrl.protocols import Engine
from harnessrl.proxy.config import ProxyConfig
from harnessrl.proxy.node import NodeSpec
from harnessrl.rollout.config import RolloutConfig
from harnessrl.rollout.lanes import ProcessLanes
from harnessrl.rollout.runner import RunnerSettings

if TYPE_CHECKING:
    from harnessrl.rollout.ray_backend import RayRolloutRunner

EVERYWHERE = ("0.0.0.0", "")


def remote_sessions(rollout: RolloutConfig, proxy: ProxyConfig) -> bool:
    """Whether the rollouts' sessions live in proxy processes (Ray, or `proxy.processes` > 0)."""
    return rollout.backend == "ray" or proxy.processes > 0


def engine_address(rollout: RolloutConfig, proxy: ProxyConfig, node: str | None) -> tuple[str, str]:
    """(the interface the engine server binds, the address proxy processes reach it at); `node`: this
    node's address on the Ray cluster (None without Ray)."""
    joined = rollout.backend == "ray" and rollout.ray.address is not None and node is not None
    bind = proxy.engine_host or (node if joined and node else "127.0.0.1")
    reach = bind if bind not in EVERYWHERE else (node or "127.0.0.1")
    if rollout.backend == "ray" and rollout.ray.advertise_host:
        reach = rollout.ray.advertise_host
    return bind, reach


async def start_remote(
    engine: Engine,
    rollout: RolloutConfig,
    proxy: ProxyConfig,
    sampling: SamplingConfig,
    settings: RunnerSettings,
) -> tuple[EngineServer, RayRolloutRunner | ProcessLanes]:
    """Serve `engine`, then start the backend's proxy processes against it (module docstring)."""
    ray_runner: RayRolloutRunner | None = None
    node = None
    if rollout.backend == "ray":
        from harnessrl.rollout.ray_backend import RayRolloutRunner

        ray_runner = RayRolloutRunner(settings, rollout.ray)
        node = ray_runner.join()
    bind, reach = engine_address(rollout, proxy, node)
    server = EngineServer(engine, bind, proxy.engine_port)
    runner: RayRolloutRunner | ProcessLanes | None = ray_runner
    try:
        await server.start()
        host = proxy.host
        if ray_runner is not None and host not in EVERYWHERE:
            host = "127.0.0.1"  # a worker's proxy serves the sandboxes of its own machine
        spec = NodeSpec(
            engine_url=f"http://{reach}:{server.port}",
            engine_token=server.token,
            host=host,
            port=0 if ray_runner is not None else proxy.port,  # several workers may share a machine
            proxy=proxy,
            sampling=sampling,
        )
        if ray_runner is not None:
            await ray_runner.start(spec)
        else:
            runner = ProcessLanes(spec, settings, proxy.processes)
            await runner.start()
    except BaseException:
        if runner is not None:
            await runner.close()
        await server.stop()
        raise
    assert runner is not None
    return server, runner
