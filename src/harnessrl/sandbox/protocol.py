"""Host side of the agent's control protocol: 4-byte big-endian length + a `marshal`-ed dict.

marshal (not JSON) because the agent must start fast and import nothing heavy; both ends are ours and
the host is trusted, so marshal's lack of safety against hostile input does not matter here: the
agent never sends anything the sandboxed command controls.
"""

from __future__ import annotations

import asyncio
import marshal
from typing import Any


def encode_frame(obj: dict[str, Any]) -> bytes:
    data = marshal.dumps(obj)
    return len(data).to_bytes(4, "big") + data


def write_frame(writer: asyncio.StreamWriter, obj: dict[str, Any]) -> None:
    writer.write(encode_frame(obj))


async def read_frame(reader: asyncio.StreamReader) -> dict[str, Any]:
    """Raises asyncio.IncompleteReadError when the agent has gone away."""
    n = int.from_bytes(await reader.readexactly(4), "big")
    obj = marshal.loads(await reader.readexactly(n))
    if not isinstance(obj, dict):
        raise ValueError(f"bad frame from the sandbox agent: {type(obj).__name__}")
    return obj
