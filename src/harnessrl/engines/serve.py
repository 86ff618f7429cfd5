"""The driver's engine served over HTTP to the proxy processes (`engines.remote` has the wire).

    async with EngineServer(engine, host="10.0.0.1") as server:   # in the driver's event loop
        spec = (server.url, server.token)                           # handed to each proxy process

One engine (embedded, scripted or vLLM), one process that pushes its weights (the driver), many
proxy processes calling it: each on a rollout machine or a local core, each sending exact prompt ids
with the session's sampling parameters and getting exact ids, log-probs and the weights version back.

It is private by construction: it binds the one interface it is given (127.0.0.1 unless a proxy
process runs on another machine; then the cluster's private interface, never 0.0.0.0 unless asked),
and every request must carry the run's token (`authorization: Bearer <token>`, 32 random bytes made
per server, compared in constant time), else 401 before the body is read. The token travels to the
proxy processes with their spec (a child's stdin, a Ray actor's argument), never in a URL or argv.

A client that disconnects while its generation runs (a proxy process that died, or shut down) cancels
that generation (`cancelled` counts them). `served` counts generate requests by peer address: the
multi-node test reads which node's proxy called.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import secrets
import socket
from collections import Counter
from collections.abc import Iterator
from typing import Any

import orjson
import uvicorn

from harnessrl.engines.remote import GENERATE_PATH, INFO_PATH, result_json, sampling_from
from harnessrl.protocols import Engine, Service

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 32 * 2**20
"""Most bytes of one request: a prompt of 2M token ids as JSON fits."""
Send = Any
Receive = Any


class QuietServer(uvicorn.Server):
    """uvicorn without its signal handlers: the proxy and the engine server run inside trainers and
    `harnessrl serve`, whose own handlers decide what a signal means (uvicorn's would swallow
    SIGINT/SIGTERM, then re-raise them once it has stopped, killing the process before it flushes)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def tcp_listener(host: str, port: int) -> socket.socket:
    """A bound TCP socket for uvicorn. proto=IPPROTO_TCP matters: asyncio sets TCP_NODELAY on accepted
    connections only when the listening socket says TCP; without it every response waits ~40 ms
    (Nagle + delayed ACK)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    return sock


async def start_uvicorn(
    config: uvicorn.Config, sock: socket.socket
) -> tuple[uvicorn.Server, asyncio.Task[None]]:
    """uvicorn serving `sock` as a task of the running loop, once it has started (raises its start-up
    error)."""
    server = QuietServer(config)
    task = asyncio.ensure_future(server.serve(sockets=[sock]))
    while not server.started:
        if task.done():
            task.result()
        await asyncio.sleep(0.01)
    return server, task


async def stop_uvicorn(server: uvicorn.Server | None, task: asyncio.Task[None] | None) -> None:
    """Ask it to stop and wait (in-flight requests get its graceful shutdown time)."""
    if server is not None and task is not None:
        server.should_exit = True
        await task


async def _reply(send: Send, status: int, body: Any) -> None:
    data = orjson.dumps(body)
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": data})


class EngineServer(Service):
    """`engine` over HTTP (module docstring); `start()` returns its URL."""

    def __init__(
        self, engine: Engine, host: str = "127.0.0.1", port: int = 0, *, token: str | None = None
    ) -> None:
        self.engine = engine
        self.host, self.port = host, port
        self.token = token or secrets.token_urlsafe(32)
        self.url = ""
        self.served: Counter[str] = Counter()
        """Generate requests answered or begun, by peer address."""
        self.refused = 0
        """Requests refused for a missing or wrong token."""
        self.cancelled = 0
        """Generations cancelled because their client went away."""
        self._info: dict[str, Any] = {}
        self._server: uvicorn.Server | None = None
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> str:
        from harnessrl.chat.tokenizers import hf_vocab_digest, tokenizer_spec

        tok = self.engine.tokenizer
        self._info = {
            "model_id": str(getattr(self.engine, "model_id", "") or ""),
            "max_context": getattr(self.engine, "max_context", None),
            "tokenizer": tokenizer_spec(tok),
            "tokenizer_digest": hf_vocab_digest(tok),
        }
        sock = tcp_listener(self.host, self.port)
        self.port = sock.getsockname()[1]
        self.url = f"http://{self.host}:{self.port}"
        config = uvicorn.Config(
            self, http="httptools", log_level="warning", lifespan="off", access_log=False,
            timeout_keep_alive=600, timeout_graceful_shutdown=2,
        )  # fmt: skip
        self._server, self._task = await start_uvicorn(config, sock)
        return self.url

    async def stop(self) -> None:
        await stop_uvicorn(self._server, self._task)
        self._server = self._task = None

    async def __call__(self, scope: dict[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        if not self._authorized(scope):
            self.refused += 1
            await _reply(send, 401, {"error": "this engine serves only its run's proxies (token refused)"})
            return
        route = (scope["method"], scope["path"])
        if route == ("GET", INFO_PATH):
            info = {**self._info, "weights_version": getattr(self.engine, "weights_version", None)}
            await _reply(send, 200, info)
        elif route == ("POST", GENERATE_PATH):
            peer = scope.get("client") or ("?", 0)
            self.served[str(peer[0])] += 1
            await self._generate(receive, send)
        else:
            await _reply(send, 404, {"error": f"no route {scope['method']} {scope['path']}"})

    def _authorized(self, scope: dict[str, Any]) -> bool:
        want = f"Bearer {self.token}".encode()
        for name, value in scope["headers"]:
            if name == b"authorization":
                return hmac.compare_digest(value, want)
        return False

    async def _generate(self, receive: Receive, send: Send) -> None:
        try:
            body = await _read_body(receive)
            d = orjson.loads(body)
            ids = d["prompt_ids"]
            if not isinstance(ids, list) or not ids or not all(type(t) is int and t >= 0 for t in ids):
                raise ValueError("prompt_ids must be a non-empty list of token ids")
            sampling = sampling_from(d["sampling"])
        except (ValueError, KeyError, TypeError) as e:  # orjson.JSONDecodeError is a ValueError
            await _reply(send, 400, {"error": f"bad generate request: {type(e).__name__}: {e}"})
            return
        except _Gone:
            return
        task = asyncio.ensure_future(self.engine.generate(ids, sampling))
        gone = asyncio.ensure_future(_disconnect(receive))
        try:
            await asyncio.wait({task, gone}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            gone.cancel()
        if not task.done():  # the proxy process went away: nobody will read this generation
            task.cancel()
            self.cancelled += 1
            with contextlib.suppress(BaseException):
                await task
            return
        try:
            result = task.result()
        except Exception as e:
            log.warning("engine failed on a remote call: %s: %s", type(e).__name__, e)
            await _reply(send, 500, {"error": f"{type(e).__name__}: {e}"})
            return
        await _reply(send, 200, result_json(result, getattr(self.engine, "weights_version", None)))


class _Gone(Exception):
    """The client disconnected while its request body was being read."""


async def _read_body(receive: Receive) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise _Gone
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise ValueError(f"request body exceeds {MAX_BODY_BYTES} bytes")
        chunks.append(chunk)
        if not message.get("more_body"):
            return b"".join(chunks)


async def _disconnect(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
