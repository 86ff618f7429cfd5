"""Host side of the agent's control protocol: 4-byte big-endian length + a payload.

Host to agent (trusted): NUL-separated text fields, `encode_request` (both agents, the native one
in C and `_agent.py`, parse it without importing anything).
Agent to host: a small flat JSON object, parsed here as untrusted input. The agent is non-dumpable
and pid 1 of its namespace, so no command can write to its pipes; the checks below are the second
wall: a reply is at most `MAX_REPLY_BYTES`, must be a JSON object with the expected fields and
types, and must answer the request that is outstanding.
"""

from __future__ import annotations

import asyncio
import os
import resource
from collections.abc import Mapping, Sequence
from typing import Any

from harnessrl.formats import untrusted_json

MAX_REPLY_BYTES = 64 * 1024
"""The agent's replies are a few dozen bytes (an error message at most ~4 KB)."""


class ProtocolError(ValueError):
    """The agent's side of the channel sent something that is not a valid reply."""


def encode_request(
    req_id: int,
    argv: Sequence[str],
    env: Mapping[str, str],
    cwd: str,
    timeout_s: float | None,
    grace_s: float,
    rlimits: Mapping[str, int],
    nfds: int,
) -> bytes:
    """One exec request frame: "exec", id, cwd, timeout ("" = none), grace, nfds, argc, argv...,
    envc, "K=V"..., nrlimits, (resource number, value)... , each field NUL-terminated (os.fsencode,
    so any str round-trips). ValueError for what no exec could take: an empty argv, a NUL in any
    string, an environment name that is empty or holds "=", an unknown rlimit name."""
    if not argv:
        raise ValueError("empty argv")
    for k in env:
        if not k or "=" in k:
            raise ValueError(f"illegal environment variable name {k!r:.80}")
    limits: list[str] = []
    for name, value in rlimits.items():
        number = getattr(resource, name, None)
        if not name.startswith("RLIMIT_") or not isinstance(number, int):
            raise ValueError(f"unknown resource limit {name!r}")
        limits += [str(number), str(int(value))]
    timeout = "" if timeout_s is None or timeout_s <= 0 else repr(float(timeout_s))
    fields = ["exec", str(req_id), cwd, timeout, repr(float(grace_s)), str(nfds), str(len(argv)), *argv]
    fields += [str(len(env)), *(f"{k}={v}" for k, v in env.items()), str(len(rlimits)), *limits]
    parts = []
    for field in fields:
        data = os.fsencode(field)
        if b"\0" in data:
            raise ValueError(f"embedded null byte in {field!r:.80}")
        parts.append(data + b"\0")
    payload = b"".join(parts)
    return len(payload).to_bytes(4, "big") + payload


async def read_reply(reader: asyncio.StreamReader) -> dict[str, Any]:
    """One reply frame. Raises asyncio.IncompleteReadError when the agent has gone away and
    ProtocolError when the frame is oversized or not a JSON object."""
    n = int.from_bytes(await reader.readexactly(4), "big")
    if n > MAX_REPLY_BYTES:
        raise ProtocolError(f"agent reply of {n} bytes (limit {MAX_REPLY_BYTES})")
    try:
        data = await reader.readexactly(n)
        obj = untrusted_json.loads(data, "agent reply", max_bytes=MAX_REPLY_BYTES, keep_surrogates=True)
    except untrusted_json.UntrustedJSONError as e:
        raise ProtocolError(str(e)) from None
    if not isinstance(obj, dict):
        raise ProtocolError(f"agent reply is a {type(obj).__name__}, not an object")
    return obj


def check_exec_reply(reply: dict[str, Any], req_id: int) -> tuple[int, bool, str]:
    """(rc, timed_out, error) of a reply to request `req_id`; ProtocolError if it is anything else."""
    rc, timed_out, error = reply.get("rc"), reply.get("timed_out"), reply.get("error")
    if reply.get("id") != req_id:
        raise ProtocolError(f"agent answered request {reply.get('id')!r}, expected {req_id}")
    if type(rc) is not int or type(timed_out) is not bool or not isinstance(error, str):
        raise ProtocolError(f"malformed agent reply {reply!r:.200}")
    return rc, timed_out, error
