"""Host side of the agent's control protocol: 4-byte big-endian length + a payload.

Host to agent: `marshal` (the agent must start fast and import nothing heavy; the host is trusted).
Agent to host: a small flat JSON object, parsed here as untrusted input. The agent is non-dumpable
and pid 1 of its namespace, so no command can write to its pipes; the checks below are the second
wall: a reply is at most `MAX_REPLY_BYTES`, must be a JSON object with the expected fields and
types, and must answer the request that is outstanding.
"""

from __future__ import annotations

import asyncio
import json
import marshal
from typing import Any

MAX_REPLY_BYTES = 64 * 1024
"""The agent's replies are a few dozen bytes (an error message at most ~4 KB)."""


class ProtocolError(ValueError):
    """The agent's side of the channel sent something that is not a valid reply."""


def encode_frame(obj: dict[str, Any]) -> bytes:
    data = marshal.dumps(obj)
    return len(data).to_bytes(4, "big") + data


def write_frame(writer: asyncio.StreamWriter, obj: dict[str, Any]) -> None:
    writer.write(encode_frame(obj))


async def read_reply(reader: asyncio.StreamReader) -> dict[str, Any]:
    """One reply frame. Raises asyncio.IncompleteReadError when the agent has gone away and
    ProtocolError when the frame is oversized or not a JSON object."""
    n = int.from_bytes(await reader.readexactly(4), "big")
    if n > MAX_REPLY_BYTES:
        raise ProtocolError(f"agent reply of {n} bytes (limit {MAX_REPLY_BYTES})")
    try:
        obj = json.loads(await reader.readexactly(n))
    except (UnicodeDecodeError, ValueError) as e:
        raise ProtocolError(f"agent reply is not JSON: {e}") from None
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
