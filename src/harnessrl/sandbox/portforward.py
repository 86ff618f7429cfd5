"""Host side of the model-endpoint bridge: a unix socket whose connections are piped to a TCP address.

Inside the sandbox the agent listens on 127.0.0.1:PORT and pipes each connection to this unix socket
(bound into the sandbox read-only); here each one is piped on to the proxy's TCP port. Bytes are
copied as they are: HTTP, SSE streaming and keep-alives pass untouched. Nothing else is reachable.
At most `max_connections` are open at once: one sandbox must not take the proxy's connections from
every other rollout (the proxy's cap is shared, and idle keep-alive connections count).
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except (ConnectionError, OSError):
        pass


class UnixToTcpForwarder:
    """Serve `sock_path`; every connection is forwarded to `host:port`, at most `max_connections` at
    once (past it a connection is closed unanswered). `close()` drops them all."""

    def __init__(self, sock_path: Path, host: str, port: int, max_connections: int = 32) -> None:
        self.sock_path = sock_path
        self.host = host
        self.port = port
        self.max_connections = max_connections
        self.connections = 0
        """Connections forwarded so far (tests and the benchmark read it)."""
        self.refused = 0
        """Connections closed for being past `max_connections`."""
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        self._server = await asyncio.start_unix_server(self._handle, path=str(self.sock_path))

    async def _handle(self, down_r: asyncio.StreamReader, down_w: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        if len(self._tasks) >= self.max_connections:
            self.refused += 1
            down_w.close()
            return
        self._tasks.add(task)
        self.connections += 1
        up_w: asyncio.StreamWriter | None = None
        try:
            up_r, up_w = await asyncio.open_connection(self.host, self.port)
            await asyncio.gather(_pipe(down_r, up_w), _pipe(up_r, down_w))
        except (ConnectionError, OSError):
            pass
        finally:
            for w in (down_w, up_w):
                if w is not None:
                    w.close()
            self._tasks.discard(task)

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        with contextlib.suppress(FileNotFoundError):
            self.sock_path.unlink()
