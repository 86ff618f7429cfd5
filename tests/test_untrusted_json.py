"""`formats.untrusted_json`, the one decoder for JSON from untrusted bytes: a value or one typed error
naming what was decoded, whatever the bytes; and the decoders outside the proxy that use it (tool calls
in model output, harness output)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harnessrl.chat.parse import parse_text, parse_tool_call
from harnessrl.formats.untrusted_json import UntrustedJSONError, loads

REFUSED = [
    (b"[" * 5000 + b"]" * 5000, "nests deeper than 256 levels", False),  # the parser's own recursion
    (b"[" * 300 + b"]" * 300, "nests deeper than 256 levels", False),  # parses, then the walk refuses
    (b'{"a": ' + b"9" * 5000 + b"}", "holds an integer of 5000 digits (at most 4300)", False),
    (b"-" + b"1" * 4301, "holds an integer of 4301 digits (at most 4300)", False),
    (b'"\\ud800"', "holds a lone UTF-16 surrogate (surrogates not allowed), not Unicode text", False),
    (b'"x\\udc00\\ud800"', "holds a lone UTF-16 surrogate (surrogates not allowed), not Unicode text", False),
    (b"\xff{}", "is not JSON: not UTF-8 text (byte 0)", True),
    (b'{"a": 1', "is not JSON: Expecting ',' delimiter: line 1 column 8 (char 7)", True),
    (b"", "is not JSON: Expecting value: line 1 column 1 (char 0)", True),
]


@pytest.mark.parametrize(("raw", "reason", "not_json"), REFUSED, ids=range(len(REFUSED)))
@pytest.mark.parametrize("as_text", [False, True])
def test_each_refusal_is_one_typed_error_naming_the_field(
    raw: bytes, reason: str, not_json: bool, as_text: bool
) -> None:
    data: bytes | str = raw.decode("utf-8", "surrogateescape") if as_text else raw
    if as_text and raw.startswith(b"\xff"):  # as text, a lone surrogate where JSON cannot start
        reason = "is not JSON: Expecting value: line 1 column 1 (char 0)"
    with pytest.raises(UntrustedJSONError) as e:
        loads(data, "messages[1].arguments")
    assert (str(e.value), e.value.where, e.value.reason) == (
        f"messages[1].arguments {reason}",
        "messages[1].arguments",
        reason,
    )
    assert e.value.not_json is not_json and isinstance(e.value, ValueError)


def test_limits_hold_at_their_bounds_and_move_with_the_caller() -> None:
    assert loads(b"[" * 256 + b"]" * 256, "x") == json.loads(b"[" * 256 + b"]" * 256)
    assert loads(b"9" * 4300, "x") == int("9" * 4300)
    assert loads("12345678901234567890123", "x") == 12345678901234567890123  # past 64 bits: exact
    assert loads(b'"\\ud83d\\ude00"', "x") == "\U0001f600"  # a pair is one character
    assert loads(b'"\\ud800"', "x", keep_surrogates=True) == "\ud800"
    with pytest.raises(UntrustedJSONError, match=r"^x exceeds 10 bytes$"):
        loads(b'"' + b"a" * 10 + b'"', "x", max_bytes=10)
    with pytest.raises(UntrustedJSONError, match=r"^x nests deeper than 3 levels$"):
        loads(b"[[[[]]]]", "x", max_depth=3)
    with pytest.raises(UntrustedJSONError, match=r"^x holds an integer of 3 digits"):
        loads(b"[100]", "x", max_int_digits=2)
    assert loads(b'["[[[[", 100.5]', "x", max_depth=1, max_int_digits=2) == ["[[[[", 100.5]


json_text = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=20,
).map(lambda v: json.dumps(v))


@given(data=st.binary(max_size=200) | json_text.map(str.encode) | st.text(max_size=200) | json_text)
def test_any_input_is_a_value_or_the_typed_error(data: bytes | str) -> None:
    try:
        value = loads(data, "x")
    except UntrustedJSONError:
        return
    want: Any = json.loads(data)
    assert json.dumps(value, allow_nan=True) == json.dumps(want, allow_nan=True)


@pytest.mark.parametrize(
    "body",
    [
        '{"name": "exec", "arguments": ' + "[" * 5000 + "]" * 5000 + "}",
        '{"name": "exec", "arguments": "' + "[" * 5000 + "]" * 5000 + '"}',
        '{"name": "exec", "arguments": {"n": ' + "9" * 5000 + "}}",
        '{"name": "exec", "arguments": {"s": "\\ud800"}}',
    ],
    ids=["nested", "nested-string", "long-int", "lone-surrogate"],
)
def test_model_output_the_decoder_refuses_is_a_malformed_call_never_an_exception(body: str) -> None:
    """A policy can write these itself: json.loads raised RecursionError / ValueError out of the chat
    format's parser, which made the proxy answer the call with an engine error."""
    assert parse_tool_call(body) is None
    parsed = parse_text(f"<tool_call>\n{body}\n</tool_call>")
    assert (parsed.tool_calls, len(parsed.malformed)) == ([], 1)
