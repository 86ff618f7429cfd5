"""The one decoder for JSON from untrusted bytes: a value, or one `UntrustedJSONError`, whatever the bytes.

    value = loads(raw, "request body")                       # bytes or str
    args = loads(text, "messages[1].tool_calls[0].function.arguments", max_bytes=len(text))

Used wherever JSON arrives from something the policy can influence: the proxy's request bodies and
the JSON strings inside them (tool-call arguments, every dialect), the tool calls in model output, a
checker's printed result, a judge's reply, the harness's output, the in-sandbox agent's replies.
`json.loads` alone raises `RecursionError` on deep nesting and a bare `ValueError` on an integer
past Python's digit limit (and, in between, hands later stages a structure they recurse through past
Python's limit): whoever forgot one of the three answered 500 or crashed. Here every refusal is one
typed error whose message names `where` and the limit.

Limits: `max_bytes` of input (characters for a str), `max_depth` levels of nesting (real API requests
nest < 20 deep), `max_int_digits` digits in an integer literal (digits inside strings do not count),
and no lone UTF-16 surrogate in any string (`"\\ud800"` is valid JSON but not Unicode text: no
encoder takes it, so writing it anywhere later fails) unless the caller keeps them to replace itself.

Speed (`benchmarks/proxy_traffic.py --stages`): orjson decodes (2-3x faster than `json` on a Claude
Code body of 50-180 KB). Where orjson refuses what `json` takes (NaN, integers past 64 bits, UTF-16
text, an escaped lone surrogate, deeper than 1,024 levels) or fails, `json` decides, so what is
accepted, what is decoded and the syntax-error messages stay `json`'s. The one value orjson decodes
differently, an integer past 64 bits (a float to orjson), needs a run of 19 digits: input with one
anywhere goes to `json` (found by a byte translation, ~0.05 ms on 150 KB, where a regex took 1.5 ms).
The depth walk and the surrogate check run only when a cheap scan says they could find something.
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

from harnessrl.types import HarnessRLError

MAX_DEPTH = 256
"""Deeper nesting is refused (Python's parser recurses per level; so do later stages)."""
MAX_INT_DIGITS = 4300
"""Longer integer literals are refused (Python's own default `sys.int_max_str_digits`, fixed here so
that an environment variable cannot move it; converting is quadratic in the digits)."""
MAX_BYTES = 64 << 20
"""Default input cap; callers that know a smaller bound (the proxy's body limit) pass it."""


class UntrustedJSONError(HarnessRLError, ValueError):
    """JSON from untrusted bytes that cannot be taken: not JSON, too large, too deep, an integer too
    long, or a lone surrogate. `where` names what was decoded (a field, a file); `reason` says why;
    `not_json` tells text that is no JSON at all (a syntax error, not UTF-8) from JSON past a limit;
    for a syntax error `msg` and `lineno` are the parser's (a loader names the line), else None."""

    def __init__(
        self,
        where: str,
        reason: str,
        not_json: bool = False,
        msg: str | None = None,
        lineno: int | None = None,
    ) -> None:
        super().__init__(f"{where} {reason}")
        self.where = where
        self.reason = reason
        self.not_json = not_json
        self.msg = msg
        self.lineno = lineno


def loads(
    data: bytes | str,
    where: str = "JSON",
    *,
    max_bytes: int = MAX_BYTES,
    max_depth: int = MAX_DEPTH,
    max_int_digits: int = MAX_INT_DIGITS,
    keep_surrogates: bool = False,
) -> Any:
    """`data` decoded, or UntrustedJSONError naming `where` (see the module docstring). With
    `keep_surrogates`, lone surrogates are let through for a caller that replaces them itself (the
    harness parsers' `as_text`: a Node harness that cut an emoji in half prints one, escaped)."""
    if len(data) > max_bytes:
        raise UntrustedJSONError(where, f"exceeds {max_bytes} bytes")
    try:
        value = _decode(data, max_int_digits)
    except _LongInteger as e:
        why = f"holds an integer of {e.digits} digits (at most {max_int_digits})"
        raise UntrustedJSONError(where, why) from None
    except RecursionError:
        raise UntrustedJSONError(where, f"nests deeper than {max_depth} levels") from None
    except UnicodeDecodeError as e:
        why = f"is not JSON: not UTF-8 text (byte {e.start})"
        raise UntrustedJSONError(where, why, not_json=True) from None
    except json.JSONDecodeError as e:
        why = f"is not JSON: {str(e)[:200]}"
        raise UntrustedJSONError(where, why, not_json=True, msg=e.msg, lineno=e.lineno) from None
    except ValueError as e:  # anything else the parser refuses
        raise UntrustedJSONError(where, f"is not JSON: {str(e)[:200]}", not_json=True) from None
    _check_depth(data, value, max_depth, where)
    if not keep_surrogates:
        _check_surrogates(data, value, where)
    return value


def not_json(e: UntrustedJSONError) -> str:
    """How a file reader words `e`: `not JSON (<parser message>, line N)` for a syntax error (the
    readers' wording since before this decoder), else the limit the file broke."""
    return f"not JSON ({e.msg}, line {e.lineno})" if e.msg is not None else f"JSON {e.reason}"


class _LongInteger(Exception):
    def __init__(self, digits: int) -> None:
        self.digits = digits


def _decode(data: bytes | str, max_int_digits: int) -> Any:
    """orjson where it decides as `json` would (no run of 19 digits, nor of more than `max_int_digits`),
    else `json` with bounded integers."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    run = _NINETEEN_DIGITS if max_int_digits >= 19 else b"0" * (max_int_digits + 1)
    if run not in raw.translate(_DIGITS_TO_ZERO):
        try:
            return orjson.loads(raw)
        except Exception:
            pass

    def bounded_int(text: str) -> int:
        digits = len(text) - (text[0] == "-")
        if digits > max_int_digits:
            raise _LongInteger(digits)
        return int(text)

    return json.loads(data, parse_int=bounded_int)


_DIGITS_TO_ZERO = bytes.maketrans(b"123456789", b"000000000")
_NINETEEN_DIGITS = b"0" * 19


def _check_depth(data: bytes | str, value: Any, limit: int, where: str) -> None:
    """Refuse a value nested deeper than `limit` (deeper than ~1,000 the parser itself fails). Only
    input with more than `limit` opening brackets is walked, and only its containers."""
    if isinstance(data, bytes):
        brackets = data.count(b"[") + data.count(b"{")
    else:
        brackets = data.count("[") + data.count("{")
    if brackets <= limit:
        return
    level: list[Any] = [value]  # the containers at one depth, breadth first (no per-node tuples)
    for _ in range(limit):
        deeper: list[Any] = []
        for node in level:
            if type(node) is dict:
                node = node.values()
            elif type(node) is not list:
                continue
            for c in node:
                if type(c) is dict or type(c) is list:  # the decoders make exactly these
                    deeper.append(c)
        if not deeper:
            return
        level = deeper
    raise UntrustedJSONError(where, f"nests deeper than {limit} levels")


_LONE_SURROGATE = (
    rb"\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F])"  # a high half not followed by a low one
    rb"|(?<!\\u[dD][89abAB][0-9a-fA-F]{2})\\u[dD][c-fC-F][0-9a-fA-F]{2}"  # a low half alone
)
_LONE_SURROGATE_ESCAPE = re.compile(_LONE_SURROGATE)
_LONE_SURROGATE_ESCAPE_STR = re.compile(_LONE_SURROGATE.decode())
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
"""Any escaped UTF-16 surrogate half, paired or not (what `_LONE_SURROGATE_ESCAPE` needs to match)."""
_SURROGATE_ESCAPE_STR = re.compile(r"\\u[dD][89a-fA-F]")


def _check_surrogates(data: bytes | str, value: Any, where: str) -> None:
    """Refuse a string holding a lone UTF-16 surrogate. Only input whose text shows an unpaired
    surrogate escape is encoded to check: an escaped pair (an emoji from a client that escapes
    non-ASCII) decodes to one character and costs nothing more. The pairing regex (lookarounds tried
    at every byte, ~13 ns a byte: 2.4 ms for a Claude Code body of 177 KB) runs only on input that
    holds a surrogate escape at all (a literal-prefix scan, ~30x faster). A str may also hold a lone
    surrogate as a character, unescaped: non-ASCII str input is encoded once to find one."""
    if isinstance(data, bytes):
        suspect = bool(_SURROGATE_ESCAPE.search(data) and _LONE_SURROGATE_ESCAPE.search(data))
    else:
        if not data.isascii():
            _encodes(data, where)
        suspect = bool(_SURROGATE_ESCAPE_STR.search(data) and _LONE_SURROGATE_ESCAPE_STR.search(data))
    if suspect:
        _encodes(json.dumps(value, ensure_ascii=False), where)


def is_text(text: str) -> bool:
    """Whether `text` is Unicode text that can be written (no lone UTF-16 surrogate, which a JSON
    `\\ud800` escape gives and UTF-8 cannot encode)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _encodes(text: str, where: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        why = f"holds a lone UTF-16 surrogate ({e.reason}), not Unicode text"
        raise UntrustedJSONError(where, why) from None


__all__ = ["MAX_BYTES", "MAX_DEPTH", "MAX_INT_DIGITS", "UntrustedJSONError", "is_text", "loads"]
