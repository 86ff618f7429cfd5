"""Parsers of what untrusted code produced, fed hostile bytes: each returns a value or raises its one
typed error, whatever the bytes (DESIGN's failure policy: any other exception used to reach the
runner's catch-all and make the policy's failure an infrastructure fault, dropped, never trained).

Every harness adapter's `parse` (HarnessError) and the judge's reply parsers (`parse_score`: a level
or None; `reply_text`: text or ValueError) get deep nesting, integers past the 4,300-digit limit,
wrong types in every field the adapters read, text that was not UTF-8, NUL, lone surrogates and
10 MB lines. The checker's report and stdout parsers are covered beside the checker."""

from __future__ import annotations

import json

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harnessrl.harnesses import HarnessResult, get_harness
from harnessrl.harnesses.code_puppy import MARK as PUPPY_MARK
from harnessrl.harnesses.mini_swe_agent import MARK as MSWEA_MARK
from harnessrl.harnesses.parsing import outcome
from harnessrl.harnesses.registry import HARNESSES as REGISTERED
from harnessrl.sandbox.spec import ExecResult
from harnessrl.types import HarnessError
from harnessrl.verify.judge import parse_score, reply_text

HARNESSES = [*sorted(REGISTERED), "whitebox:00000"]
"""Every registered adapter (the new ones too) and the white-box family."""
KEYS = [
    "type", "subtype", "result", "is_error", "num_turns", "item", "text", "error", "message",
    "ok", "final", "status", "assistantTurns", "code", "turns", "calls",
]  # fmt: skip
TYPES = ["result", "success", "item.completed", "agent_message", "turn.completed", "turn.failed", "error"]
MB10 = 10 * 2**20
BIG_LINES = [
    "x" * MB10,
    "{" + " " * MB10,
    '{"type": "result", "subtype": "success", "is_error": false, "result": "' + "a" * MB10 + '"}',
    '{"code": "00000", "ok": true, "final": "' + "\\u0000" * (MB10 // 6) + '"}',
    '{"type": "item.completed", "item": ' + "[" * (MB10 // 2) + "]" * (MB10 // 2) + "}",
]
"""10 MB lines: noise, an unfinished object, a huge valid result, NUL escapes, deep nesting."""

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**40), max_value=10**40),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),  # NUL and lone surrogates included
    st.sampled_from(TYPES),
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(KEYS), inner, max_size=4),
    max_leaves=12,
)
events = st.dictionaries(st.sampled_from(KEYS), values, max_size=6).map(
    lambda d: {"type": d.get("type", "result"), "code": "00000", **d}
)


def _json(obj: object, ascii_only: bool) -> str:
    return json.dumps(obj, ensure_ascii=ascii_only)


def _deep(n: int, opener: str) -> str:
    closer = {"[": "]", '{"a":': "}"}[opener]
    inner = "[" * n + "]" * n if opener == "[" else opener * n + "1" + closer * n
    return '{"type": "result", "code": "00000", "result": ' + inner + "}"


hostile_lines = st.one_of(
    st.builds(_json, events, st.booleans()),  # wrong types in every field read
    st.integers(min_value=900, max_value=120_000).map(lambda n: _deep(n, "[")),
    st.integers(min_value=900, max_value=30_000).map(lambda n: _deep(n, '{"a":')),
    st.integers(min_value=4_301, max_value=20_000).map(
        lambda n: '{"type": "result", "num_turns": ' + "9" * n + ', "code": "x", "turns": 1}'
    ),
    st.binary(max_size=200).map(lambda b: b.decode("utf-8", "replace")),  # how the sandbox decodes
    st.binary(max_size=200).map(lambda b: b.decode("utf-8", "surrogateescape")),  # or worse
    st.text(max_size=200),
    st.just('{"type": "result", "result": "\\ud800", "final": "\\udfff", "code": "\\u0000"}'),
    st.sampled_from(BIG_LINES),
)
results = st.builds(
    ExecResult,
    returncode=st.integers(min_value=-64, max_value=255),
    stdout=st.lists(hostile_lines, max_size=6).map("\n".join),
    stderr=st.text(max_size=100),
    timed_out=st.booleans(),
    duration_s=st.just(1.0),
    error=st.sampled_from(["", "exec failed: \udcff"]),
)


def check_parse(name: str, res: ExecResult) -> None:
    """The one property: a HarnessResult that can be written (no lone surrogate, a sane turn
    count, the real exit status), or HarnessError."""
    try:
        out = get_harness(name).parse(res)
    except HarnessError:
        return
    assert isinstance(out, HarnessResult)
    out.model_dump_json()  # a lone surrogate cannot be encoded: the artifacts would fail
    assert out.exit_code == res.returncode and (out.timed_out or not res.timed_out)
    assert out.turns is None or 0 <= out.turns < 2**31
    assert not out.ok or (res.returncode == 0 and not res.timed_out)


@pytest.mark.parametrize("name", HARNESSES)
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(res=results)
def test_every_adapter_parse_returns_a_result_or_raises_harness_error(name: str, res: ExecResult) -> None:
    check_parse(name, res)


def _exec(stdout: str) -> ExecResult:
    return ExecResult(returncode=0, stdout=stdout, stderr="", timed_out=False, duration_s=1.0)


TEXT_OUTPUT = {"shell", "continue", "hermes", "aider", "mistral-vibe", "kimi-cli"}
"""Harnesses whose final message is their plain stdout: they read no JSON at all (aider's is done
only after its `Tokens:` line)."""
JSON_AFTER = {"mini-swe-agent": MSWEA_MARK + "\n", "code-puppy": PUPPY_MARK + "\n"}
"""Harnesses that read JSON only after a marker line of their launch script."""
REPRODUCED = [
    # the whitebox attack: 256 KiB of spaces, then a line nested 100,000 deep, through the harness's fd 1
    " " * 256 * 1024 + '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}\n",
    '{"type": "result", "subtype": "success", "num_turns": ' + "1" * 5000 + "}",
]


@pytest.mark.parametrize("name", HARNESSES)
@pytest.mark.parametrize("stdout", REPRODUCED, ids=["deep", "huge-int"])
def test_reproduced_outputs_are_a_harness_error(name: str, stdout: str) -> None:
    """What escaped as RecursionError / ValueError ("internal error", fault infra) is HarnessError
    (the runner makes it the policy's failure); the text-output harnesses read no JSON at all."""
    if name in TEXT_OUTPUT:
        assert get_harness(name).parse(_exec(stdout + "\nRepo-map:\nTokens: 1 sent")).ok
        return
    with pytest.raises(HarnessError, match="JSON that cannot be read"):
        get_harness(name).parse(_exec(JSON_AFTER.get(name, "") + stdout))


@pytest.mark.parametrize(
    ("name", "stdout"),
    [
        ("whitebox:00000", '{"code": "00000", "ok": true, "final": "done", "turns": "x"}'),
        ("claude-code", '{"type": "result", "subtype": "success", "is_error": false, "num_turns": "x"}'),
        ("openclaw", '{"ok": true, "status": "ok", "final": ["x"], "assistantTurns": "x"}'),
        ("codex", '{"type": "item.completed", "item": "x"}\n{"type": "item.completed", "item": [1]}'),
    ],
)
def test_wrong_types_are_read_as_absent(name: str, stdout: str) -> None:
    """turns = "x" raised pydantic's ValidationError; codex's `item.get` on a non-object raised
    AttributeError. A field of the wrong type now reads as absent."""
    out = get_harness(name).parse(_exec(stdout))
    assert (out.turns, out.final_message if name != "whitebox:00000" else "") == (None, "")


LEVELS = [0.0, 0.25, 0.5, 1.0]
replies = st.one_of(
    st.text(max_size=300),
    st.binary(max_size=300).map(lambda b: b.decode("utf-8", "surrogateescape")),
    st.builds(
        _json, st.dictionaries(st.sampled_from(["score", "reason", "x"]), values, max_size=3), st.booleans()
    ),
    st.integers(min_value=900, max_value=120_000).map(
        lambda n: '{"score": 1, "reason": ' + "[" * n + "]" * n + "}"
    ),
    st.integers(min_value=300, max_value=20_000).map(lambda n: '{"score": ' + "9" * n + "}"),
    st.builds(lambda a, b: f'{a}{{"score": {b}}}', st.text(max_size=50), st.sampled_from(LEVELS)),
    st.sampled_from(BIG_LINES),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=replies)
def test_the_judge_reply_parser_gives_a_level_or_none(text: str) -> None:
    value = parse_score(text, LEVELS)
    assert value is None or value in LEVELS


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=st.one_of(st.binary(max_size=300), replies.map(lambda t: t.encode("utf-8", "surrogatepass"))))
def test_the_judge_reply_body_gives_text_or_value_error(body: bytes) -> None:
    wrapped = [body, b'{"choices": [{"message": {"content": ' + body + b"}}]}"]
    for content in wrapped:
        try:
            text = reply_text(httpx.Response(200, content=content))
        except ValueError:
            continue
        assert isinstance(text, str)


def test_an_error_the_harness_reports_is_cleaned_like_its_final_text() -> None:
    """A harness's own error report (a JSON string with a `\\udc80` escape) is data that gets written:
    `outcome` replaces its lone surrogates, as it does the final text's."""
    res = ExecResult(returncode=1, stdout="", stderr="", timed_out=False, duration_s=1.0)
    out = outcome(res, done=True, final="a\ud800", errors=["tool \udc80 failed", "then \udfff"])
    assert (out.ok, out.final_message, out.error) == (False, "a?", "tool ? failed; then ?")
    out.model_dump_json()
