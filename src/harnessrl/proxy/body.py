"""A request body from the wire to a dict, in one place: size cap (413), content-encoding (gzip and
deflate, still within the cap), content type, then JSON through `formats.untrusted_json` (400 for
anything it refuses: not JSON, nesting deeper than 256, an integer past 4,300 digits, a lone UTF-16
surrogate). The JSON strings inside a body (tool-call arguments, in every dialect) go through the
same decoder (`canonical.field_json`), whose refusals are 400s naming the field.

    raw = await read_body(request, headers, limit, timeout_s)  # bytes, decoded content-encoding
    body = parse_body(raw, content_type, limit)        # dict
"""

from __future__ import annotations

import asyncio
import zlib
from collections.abc import Mapping
from typing import Any

from starlette.requests import Request

from harnessrl.formats.untrusted_json import MAX_BYTES, UntrustedJSONError, loads
from harnessrl.types import RequestError


async def read_body(request: Request, headers: Mapping[str, str], limit: int, timeout_s: float) -> bytes:
    """The body, or a 413 as soon as it is known to exceed `limit` bytes, or a 408 when it is not
    whole within `timeout_s` (the connection is then closed). A client that goes away before the
    body is complete raises starlette's `ClientDisconnect`."""
    declared = headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise RequestError(f"request body exceeds {limit} bytes", status=413)
    chunks: list[bytes] = []
    size = 0
    try:
        async with asyncio.timeout(timeout_s):
            async for chunk in request.stream():
                size += len(chunk)
                if size > limit:
                    raise RequestError(f"request body exceeds {limit} bytes", status=413)
                chunks.append(chunk)
    except TimeoutError:
        raise RequestError(
            f"request body not complete within {timeout_s:g} s ({size} bytes arrived; proxy.body_timeout_s)",
            status=408,
        ) from None
    return decode_body(b"".join(chunks), headers.get("content-encoding", ""), limit)


def decode_body(raw: bytes, encoding: str, limit: int) -> bytes:
    """Undo a `gzip` / `deflate` content-encoding, still within `limit` bytes (413 beyond it); other
    encodings (zstd, br) are a 400 naming the header."""
    encoding = encoding.strip().lower()
    if encoding in ("", "identity"):
        return raw
    if encoding not in ("gzip", "deflate"):
        raise RequestError(
            f"content-encoding {encoding!r} is not supported (gzip, deflate)", param="content-encoding"
        )
    inflater = zlib.decompressobj(wbits=47)  # 32 + 15: gzip or zlib header, detected
    try:
        out = inflater.decompress(raw, limit + 1)
    except zlib.error as e:
        raise RequestError(f"request body is not valid {encoding}: {e}", param="content-encoding") from None
    if len(out) > limit:
        raise RequestError(f"decoded request body exceeds {limit} bytes", status=413)
    return out


def parse_body(raw: bytes, content_type: str, limit: int = MAX_BYTES) -> dict[str, Any]:
    """JSON object bytes -> dict; a wrong content type or anything the decoder refuses is a 400."""
    if content_type and "json" not in content_type.lower():
        raise RequestError(
            f"content-type must be application/json, got {content_type!r}", param="content-type"
        )
    try:
        body = loads(raw, "request body", max_bytes=limit)
    except UntrustedJSONError as e:
        raise RequestError(str(e)) from None
    if not isinstance(body, dict):
        raise RequestError("request body must be a JSON object")
    return body
