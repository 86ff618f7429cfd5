"""The driver's engine as seen from another process: `RemoteEngine`, the client proxy processes call it
with (the server is `engines.serve.EngineServer`), and the wire both speak.

    remote = await RemoteEngine.connect("http://10.0.0.1:41234", token)    # in a proxy process
    result = await remote.generate(prompt_ids, SamplingParams(max_tokens=64))
    remote.tokenizer, remote.max_context, remote.model_id                  # what the proxy renders with

Wire (one run's private protocol, JSON; every request carries `authorization: Bearer <run token>`):

- `GET /v1/engine` -> `{"model_id", "max_context", "tokenizer", "tokenizer_digest", "weights_version"}`:
  what the proxy records on every call, and where its tokenizer loads from (`chat.tokenizers`).
- `POST /v1/engine/generate` `{"prompt_ids": [...], "sampling": {"temperature", "top_p", "max_tokens",
  "stop_token_ids", "seed"}}` -> `{"output_ids", "output_logprobs", "finish_reason", "meta"}`: exact
  ids in and out, the sampled tokens' log-probs, and `meta.weights_version`, the weights that sampled
  it. 500 `{"error": "..."}` when the engine failed; a client that goes away cancels its generation.

The client is a small HTTP/1.1 client over asyncio streams with a keep-alive pool (httpx cost ~0.6 ms
of CPU a request here, this ~0.05 ms, on a budget of ~2 ms a call). Anything that goes wrong on the
way (connection refused or reset, a malformed answer, a 5xx) raises `EngineError`: the proxy records
the call as failed and answers 500, as when the engine fails in process. `update_weights` is the
driver's: a proxy process never pushes weights.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import orjson

from harnessrl.protocols import GenerationResult, SamplingParams
from harnessrl.types import EngineError

INFO_PATH = "/v1/engine"
GENERATE_PATH = "/v1/engine/generate"
MAX_RESPONSE_BYTES = 64 * 2**20
"""Most bytes of one answer (output ids and log-probs of the longest generation fit many times)."""
IDLE_S = 300.0
"""A pooled connection idle this long is closed rather than reused (the server keeps them 600 s)."""
_FINISH = ("stop", "length", "abort", "error")


def sampling_json(s: SamplingParams) -> dict[str, Any]:
    return {
        "temperature": s.temperature,
        "top_p": s.top_p,
        "max_tokens": s.max_tokens,
        "stop_token_ids": list(s.stop_token_ids),
        "seed": s.seed,
    }


def sampling_from(d: Any) -> SamplingParams:
    """SamplingParams from their JSON; ValueError naming what is wrong."""
    if not isinstance(d, dict):
        raise ValueError("sampling must be an object")
    temperature, top_p, max_tokens, stops, seed = (
        d.get(k) for k in ("temperature", "top_p", "max_tokens", "stop_token_ids", "seed")
    )
    if not isinstance(temperature, int | float) or not isinstance(top_p, int | float):
        raise ValueError("sampling.temperature and sampling.top_p must be numbers")
    if type(max_tokens) is not int or max_tokens < 1:
        raise ValueError("sampling.max_tokens must be a positive integer")
    if not isinstance(stops, list) or not all(type(t) is int for t in stops):
        raise ValueError("sampling.stop_token_ids must be a list of integers")
    if seed is not None and type(seed) is not int:
        raise ValueError("sampling.seed must be an integer or null")
    return SamplingParams(float(temperature), float(top_p), max_tokens, tuple(stops), seed)


def result_json(r: GenerationResult, weights_version: Any = None) -> dict[str, Any]:
    """A result as JSON: `meta` keeps its plain values; `weights_version` (the engine's now) fills it in
    when the engine's own meta has none, as the proxy in process reads it (`handler._weights_version`)."""
    meta = {k: v for k, v in r.meta.items() if v is None or type(v) in (str, int, float, bool)}
    if "weights_version" not in meta and isinstance(weights_version, int):
        meta["weights_version"] = weights_version
    return {
        "output_ids": list(r.output_ids),
        "output_logprobs": list(r.output_logprobs),
        "finish_reason": r.finish_reason,
        "meta": meta,
    }


def result_from(d: Any) -> GenerationResult:
    """A GenerationResult from its JSON; EngineError when it is not one."""
    try:
        ids, logprobs, reason, meta = (
            d[k] for k in ("output_ids", "output_logprobs", "finish_reason", "meta")
        )
        ok = all(type(t) is int for t in ids) and all(type(x) in (int, float) for x in logprobs)
        if not ok or len(ids) != len(logprobs) or reason not in _FINISH or not isinstance(meta, dict):
            raise ValueError("fields of the wrong type")
    except (KeyError, TypeError, ValueError) as e:
        raise EngineError(f"malformed answer from the engine server ({e!r})") from None
    return GenerationResult(ids, [float(x) for x in logprobs], reason, meta)


@dataclass(frozen=True)
class EngineInfo:
    """`GET /v1/engine`."""

    model_id: str
    max_context: int | None
    tokenizer: str
    """`chat.tokenizers.tokenizer_spec` of the engine's tokenizer."""
    tokenizer_digest: str
    weights_version: int | None


class HttpPool:
    """HTTP/1.1 requests with `content-length` bodies to one server, over kept-alive connections."""

    def __init__(self, url: str, token: str) -> None:
        parts = urlsplit(url)
        if parts.scheme != "http" or parts.hostname is None or parts.port is None:
            raise EngineError(f"engine server url must be http://host:port, got {url!r}")
        self.url, self.host, self.port = url, parts.hostname, parts.port
        self._auth = f"authorization: Bearer {token}\r\nhost: {self.host}\r\n".encode("latin-1")
        self._idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter, float]] = []

    async def request(self, method: str, path: str, body: bytes = b"") -> tuple[int, bytes]:
        """(status, body); EngineError when the server cannot be reached or answers garbage. A kept
        connection the server closed before answering anything is retried once on a new one."""
        head = f"{method} {path} HTTP/1.1\r\ncontent-length: {len(body)}\r\n".encode("latin-1")
        for attempt in range(2):
            reader, writer, reused = await self._connection(fresh=attempt > 0)
            try:
                writer.write(head + self._auth + b"content-type: application/json\r\n\r\n" + body)
                status, data, keep = await _response(reader)
            except BaseException as e:  # cancelled or failed: this connection is not reused
                writer.close()
                if attempt == 0 and reused and _nothing_read(e):
                    continue
                if isinstance(e, (OSError, EOFError, ValueError, asyncio.LimitOverrunError)):
                    raise EngineError(f"engine server at {self.url}: {type(e).__name__}: {e}") from None
                raise
            if keep:
                self._idle.append((reader, writer, time.monotonic()))
            else:
                writer.close()
            return status, data
        raise EngineError(f"engine server at {self.url}: no connection")

    async def _connection(self, fresh: bool) -> tuple[asyncio.StreamReader, asyncio.StreamWriter, bool]:
        now = time.monotonic()
        while self._idle and not fresh:
            reader, writer, since = self._idle.pop()
            if now - since < IDLE_S and not writer.is_closing() and not reader.at_eof():
                return reader, writer, True
            writer.close()
        try:
            reader, writer = await asyncio.open_connection(self.host, self.port, limit=2**16)
        except OSError as e:
            raise EngineError(f"engine server at {self.url} unreachable: {e}") from None
        return reader, writer, False

    def close(self) -> None:
        for _, writer, _ in self._idle:
            writer.close()
        self._idle.clear()


def _nothing_read(e: BaseException) -> bool:
    """A kept connection closed by the server before it answered a byte (safe to send again)."""
    if isinstance(e, asyncio.IncompleteReadError):
        return not e.partial
    return isinstance(e, ConnectionError)


async def _response(reader: asyncio.StreamReader) -> tuple[int, bytes, bool]:
    """(status, body, keep-alive) of one response with a `content-length` body."""
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
        raise ValueError(f"not an HTTP response: {lines[0][:100]!r}")
    fields = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:] if line)}
    length = fields.get("content-length", "")
    if not length.isdigit() or int(length) > MAX_RESPONSE_BYTES:
        raise ValueError(f"answer without a usable content-length ({length[:20]!r})")
    data = await reader.readexactly(int(length))
    return int(parts[1]), data, fields.get("connection", "").lower() != "close"


class RemoteEngine:
    """The `Engine` protocol over `EngineServer` (module docstring). Build it with `connect`."""

    def __init__(self, url: str, token: str, info: EngineInfo) -> None:
        self.url = url
        self.info = info
        self.max_context = info.max_context
        self.model_id = info.model_id
        self.weights_version = info.weights_version
        """The version the last answer was sampled with (the driver's engine bumps it)."""
        self._http = HttpPool(url, token)
        self._tokenizer: Any = None

    @classmethod
    async def connect(cls, url: str, token: str) -> RemoteEngine:
        """Ask the server what it serves; EngineError when it cannot be reached or refuses the token."""
        pool = HttpPool(url, token)
        try:
            status, data = await pool.request("GET", INFO_PATH)
        finally:
            pool.close()
        d = _answer(status, data, url)
        try:
            info = EngineInfo(
                str(d["model_id"]),
                d["max_context"] if type(d["max_context"]) is int else None,
                str(d["tokenizer"]),
                str(d["tokenizer_digest"]),
                d["weights_version"] if type(d["weights_version"]) is int else None,
            )
        except (KeyError, TypeError) as e:
            raise EngineError(f"malformed engine info from {url}: {e!r}") from None
        return cls(url, token, info)

    @property
    def tokenizer(self) -> Any:
        """The engine's tokenizer, loaded here from its spec (`chat.tokenizers.tokenizer_from_spec`)."""
        if self._tokenizer is None:
            from harnessrl.chat.tokenizers import tokenizer_from_spec

            self._tokenizer = tokenizer_from_spec(self.info.tokenizer)
        return self._tokenizer

    async def generate(self, prompt_ids: list[int], sampling: SamplingParams) -> GenerationResult:
        # the ids as they are (a list, or the tuple a proxy session holds): orjson writes either, and
        # a copy would be one more 30k-slot container for the collector to walk
        body = orjson.dumps({"prompt_ids": prompt_ids, "sampling": sampling_json(sampling)})
        status, data = await self._http.request("POST", GENERATE_PATH, body)
        result = result_from(_answer(status, data, self.url))
        version = result.meta.get("weights_version")
        if type(version) is int:
            self.weights_version = version
        return result

    async def update_weights(self, state_dict: dict[str, Any]) -> None:
        raise EngineError("weights are pushed to the engine on the driver, not through a proxy process")

    async def close(self) -> None:
        self._http.close()


def _answer(status: int, data: bytes, url: str) -> dict[str, Any]:
    """The JSON object of a 200; EngineError with the server's reason otherwise."""
    try:
        d = orjson.loads(data)
    except orjson.JSONDecodeError:
        d = None
    if status != 200:
        why = d.get("error") if isinstance(d, dict) else None
        raise EngineError(f"engine server at {url} answered {status}: {str(why or data[:200])[:500]}")
    if not isinstance(d, dict):
        raise EngineError(f"engine server at {url} answered something that is not a JSON object")
    return d
