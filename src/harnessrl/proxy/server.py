"""Running the proxy: uvicorn on a real socket, inside the caller's event loop or in its own thread.

    async with ProxyServer(deps) as server:        # rollout runner: same loop as the engine
        info = deps.sessions.open("r0")            # info.base_url = server.url + "/r/<token>"

    server = ThreadedProxyServer(deps).start()     # tests and sync callers: a loop in a thread
    ...; server.stop()

Port 0 binds a free port; `url` holds the real one. `deps.sessions.server_url` is set on start, so
sessions opened afterwards get full base URLs.

Before it serves, `start` warms the chat format up (template compiled, shortcut checks settled: the
first call would otherwise pay ~0.1-1 s) and, in a process that is the proxy (`freeze_heap`: a proxy
process, `harnessrl serve`), settles the heap once (`settle_heap`): a process with transformers loaded
holds 200k+ objects, and every full collection of the cyclic garbage collector walks them all (~0.1 s
on two cores: a pause that every call in flight waits out). A proxy in the driver's event loop leaves
the heap alone: it is the trainer's.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from harnessrl.engines.serve import start_uvicorn, stop_uvicorn, tcp_listener
from harnessrl.protocols import Service
from harnessrl.proxy.app import make_app
from harnessrl.proxy.deps import ProxyDeps
from harnessrl.proxy.sessions import SessionInfo
from harnessrl.types import ModelCall

T = TypeVar("T")
_heap_settled = False


def run(coro: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run(coro)` on uvloop's event loop when uvloop is installed (the proxy spends ~5% less
    CPU per call on it, and fewer system calls), else on the default loop. For processes whose loop
    serves the proxy (`harnessrl serve`)."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(coro)
    return uvloop.run(coro)


def warm_up(deps: ProxyDeps) -> None:
    """One-time work of the chat format done now, not on the first call (`ChatFormat.warm_up`; a format
    without that method is left alone)."""
    warm = getattr(deps.fmt, "warm_up", None)
    if callable(warm):
        warm()


def settle_heap() -> bool:
    """Once per process: collect garbage, then freeze every object alive now (`gc.freeze`), so later
    collections walk only what was allocated since (the calls and sessions being served). Frozen
    objects are still freed by reference counting; only cycles among them are never collected, and
    there are none left right after a full collection. Returns whether it ran now."""
    global _heap_settled
    if _heap_settled:
        return False
    _heap_settled = True
    gc.collect()
    gc.freeze()
    return True


MAX_HEADER_BYTES = 64 * 1024
"""The most bytes a request's line and headers may take (Node allows 16 KiB, nginx 32 KiB)."""
_TOO_LARGE = b"HTTP/1.1 431 Request Header Fields Too Large\r\nconnection: close\r\ncontent-length: 0\r\n\r\n"


class _ClientNoise:
    """uvicorn's per-connection logger with the warnings a client causes at will (a malformed
    request, an upgrade it asks for) lowered to debug: a sandbox sending garbage in a loop wrote one
    warning line per request into the driver's log. Errors of the app, and the 503s past the
    connection cap (an operator's signal), keep their level. Everything else is the logger's."""

    def __init__(self, logger: logging.Logger) -> None:
        self._logger = logger

    def __getattr__(self, name: str) -> Any:
        return getattr(self._logger, name)

    def warning(self, msg: object, *args: object, **kwargs: Any) -> None:
        if msg == "Exceeded concurrency limit.":
            self._logger.warning(msg, *args, **kwargs)
        else:
            self._logger.debug(msg, *args, **kwargs)


class HeaderDeadlineProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with a header-read deadline and size cap (uvicorn has neither): a
    request's headers must be complete within `header_timeout_s` of its first byte, or of the
    connection opening for its first request, and within `MAX_HEADER_BYTES`; else the connection is
    closed (a slowloris client holds nothing for long; headers past the cap get a 431 first: httptools
    keeps every header it has read, and 45 MB of `x-a: b` lines grew the proxy, the driver's process,
    by 620 MB in 4 s). Idle keep-alive time between requests is uvicorn's own `timeout_keep_alive`."""

    header_timeout_s = 10.0
    _deadline: asyncio.TimerHandle | None = None
    _header_bytes = 0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        self.logger = _ClientNoise(logging.getLogger("uvicorn.error"))  # type: ignore[assignment]
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        seen = self.cycle
        if self._deadline is None and (seen is None or seen.response_complete):
            self._arm()  # the first bytes of the next request on a kept-alive connection
        super().data_received(data)
        if self.cycle is not seen:  # headers complete: a new request cycle started
            self._disarm()
        elif self._deadline is not None:  # still reading headers: what httptools holds grows
            self._header_bytes += len(data)
            if self._header_bytes > MAX_HEADER_BYTES and not self.transport.is_closing():
                self._disarm()
                self.transport.write(_TOO_LARGE)
                self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._disarm()
        self._header_bytes = 0
        self._deadline = self.loop.call_later(self.header_timeout_s, self._expire)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expire(self) -> None:
        self._deadline = None
        if not self.transport.is_closing():
            self.transport.close()


def header_deadline_protocol(timeout_s: float) -> type[HeaderDeadlineProtocol]:
    """A HeaderDeadlineProtocol subclass with this deadline (uvicorn builds protocols from a class)."""
    return type("HeaderDeadline", (HeaderDeadlineProtocol,), {"header_timeout_s": timeout_s})


class ProxyServer(Service):
    """uvicorn serving `make_app(deps)` as a task of the running event loop.

    Connection limits come from `deps.config`: `header_timeout_s` (slowloris), `idle_timeout_s`
    (keep-alive), `max_connections` (503 past it)."""

    def __init__(
        self, deps: ProxyDeps, host: str | None = None, port: int | None = None, *, freeze_heap: bool = False
    ) -> None:
        self.deps = deps
        self.host = host if host is not None else deps.config.host
        self.port = port if port is not None else deps.config.port
        self.freeze_heap = freeze_heap
        """Settle the heap on start (`settle_heap`, once per process): only in a process that is the proxy."""
        self.url = ""
        self._server: uvicorn.Server | None = None
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> str:
        warm_up(self.deps)
        if self.freeze_heap:
            settle_heap()
        sock = tcp_listener(self.host, self.port)  # TCP_NODELAY on accepted connections
        self.port = sock.getsockname()[1]
        self.url = f"http://{self.host}:{self.port}"
        self.deps.sessions.server_url = self.url
        cfg = self.deps.config
        config = uvicorn.Config(
            make_app(self.deps),
            http=header_deadline_protocol(cfg.header_timeout_s),
            log_level="warning",
            lifespan="off",
            access_log=False,
            timeout_keep_alive=cfg.idle_timeout_s,
            limit_concurrency=cfg.max_connections,
            timeout_graceful_shutdown=5,  # in-flight streams get 5 s, then stop() returns
        )
        self._server, self._task = await start_uvicorn(config, sock)  # signal handlers left to the process
        return self.url

    async def stop(self) -> None:
        await stop_uvicorn(self._server, self._task)
        self._server = self._task = None

    @property
    def requests(self) -> int:
        """HTTP requests this server has taken in so far (uvicorn's count; 0 when not serving)."""
        return self._server.server_state.total_requests if self._server is not None else 0


class ThreadedProxyServer:
    """A ProxyServer in a daemon thread with its own event loop (for sync callers and tests)."""

    def __init__(self, deps: ProxyDeps, host: str | None = None, port: int | None = None) -> None:
        self.server = ProxyServer(deps, host, port)
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="harnessrl-proxy", daemon=True)
        self._opened = 0

    @property
    def url(self) -> str:
        return self.server.url

    def start(self) -> ThreadedProxyServer:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self.server.start(), self.loop).result(timeout=30)
        return self

    def open_session(self, prefix: str = "r") -> SessionInfo:
        """A session under a rollout id of its own, `<prefix><n>` (n counts the sessions opened so)."""
        self._opened += 1
        return self.server.deps.sessions.open(f"{prefix}{self._opened}")

    def calls(self, rollout_id: str) -> list[ModelCall]:
        """The calls recorded for `rollout_id` so far."""
        return self.server.deps.sessions.calls(rollout_id)

    def call(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run a coroutine on the server's loop and wait for it (e.g. to touch sessions safely)."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout=60)

    def stop(self) -> None:
        if self._thread.is_alive():
            asyncio.run_coroutine_threadsafe(self.server.stop(), self.loop).result(timeout=30)
            asyncio.run_coroutine_threadsafe(_cancel_pending(), self.loop).result(timeout=30)
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(timeout=10)
            self.loop.close()


async def _cancel_pending() -> None:
    """Cancel what is left on the loop (generations whose client went away) and wait for them."""
    tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
