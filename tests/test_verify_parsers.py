"""Every parser on the checker's path returns a value, whatever the bytes (issue 19.3a): JSON nested
100,000 deep (RecursionError), a 400-digit score (OverflowError in `float`), ints over 4,300 digits
(ValueError), wrong types, non-UTF-8, NUL, 10 MB lines. A checker answer that breaks a parser is the
checker's failure on the policy's workspace (score 0 with the reason), never an exception that the
rollout runner would record as an infrastructure fault."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from harnessrl.types import Checker, Task, TaskFile
from harnessrl.verify import RunOutput, run_checker
from harnessrl.verify.checker import _interpret, _parse_report, metrics_from_value, parse_stdout

DEEP = 100_000
HOSTILE = [
    b"[" * DEEP + b"]" * DEEP,
    b'{"a":' * DEEP + b"1" + b"}" * DEEP,
    b'{"score": 1' + b"0" * 400 + b"}",
    b'{"score": ' + b"9" * 5000 + b"}",
    b"7" * 5000,
    b'{"score": 1e400}',
    b'{"mode": "grade", "value": {"score": 1' + b"0" * 400 + b"}}",
    b'{"mode": "grade", "value": ' + b"[" * DEEP + b"]" * DEEP + b"}",
    b'{"mode": "main", "stdout": "' + b"[" * DEEP + b'"}',
    b'{"mode": "grade", "error": "   "}',
    b'{"mode": "grade", "error": "\\n\\n"}',
    b'{"mode": 5, "exit_status": [1]}',
    b'{"mode": "grade", "value": {"a": null, "b": [], "c": {}}}',
    b"\xff\xfe\x00\x00",
    b"\x00" * 1000,
    b'{"score": "\x00"}',
    b"x" * (10 * 2**20),
    b'{"score": 1}\n' + b"[" * DEEP,
]


def _answer(raw: bytes) -> tuple[dict[str, float], str | None]:
    """What run_checker makes of `raw` arriving as the driver's report, then as a checker's stdout."""
    report = _parse_report(raw)
    value, _mode, error = _interpret(RunOutput(0, "", "", False), report, 1.0)
    if error is None:
        return metrics_from_value(value)
    return {}, error


def _check_answer(raw: bytes) -> None:
    for metrics, error in (_answer(raw), _from_stdout(raw)):
        assert isinstance(error, str) or (error is None and metrics)
        assert all(isinstance(k, str) and math.isfinite(v) for k, v in metrics.items())


def _from_stdout(raw: bytes) -> tuple[dict[str, float], str | None]:
    value, error = parse_stdout(raw.decode("utf-8", errors="replace"))
    assert (value is None) == (error is not None) or value is None
    return ({}, error) if error is not None else metrics_from_value(value)


@pytest.mark.parametrize("raw", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_answers_are_values_never_exceptions(raw: bytes) -> None:
    _check_answer(raw)


def _nested(depth: int, leaf: str) -> str:
    return "[" * depth + leaf + "]" * depth


json_text = st.recursive(
    st.one_of(st.integers(), st.floats(allow_nan=True), st.text(), st.booleans(), st.none()).map(json.dumps),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4).map(lambda xs: "[" + ",".join(xs) + "]"),
        st.dictionaries(st.text(max_size=5).map(json.dumps), inner, max_size=4).map(
            lambda d: "{" + ",".join(f"{k}:{v}" for k, v in d.items()) + "}"
        ),
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.one_of(
        st.binary(max_size=2000),
        json_text.map(str.encode),
        st.builds(lambda d, leaf: _nested(d, leaf).encode(), st.integers(0, 200_000), json_text),
        st.builds(lambda n: ('{"score": ' + "1" * n + "}").encode(), st.integers(300, 9000)),
        st.builds(
            lambda n, t: json.dumps({"mode": "grade", "value": {"s": t}}).encode(), st.integers(), json_text
        ),
        st.builds(lambda t: json.dumps({"mode": "main", "stdout": t}).encode(), json_text),
    )
)
@example(b"[" * DEEP)
@example(b'{"score": 1' + b"0" * 400 + b"}")
def test_any_bytes_give_metrics_or_a_reason(raw: bytes) -> None:
    _check_answer(raw)


def _task(code: str) -> Task:
    return Task(id="t", prompt="p", checker=Checker(files=[TaskFile(path="reward/check.py", content=code)]))


@pytest.mark.parametrize(
    ("printed", "error"),
    [
        ('"{\\"score\\": 1" + "0" * 400 + "}"', "metric 'score' is not a finite number: 1" + "0" * 400),
        ('"[" * 100000 + "]" * 100000', "checker output is not JSON: '" + "]" * 200 + "'"),
        ('"9" * 5000', "checker output is not JSON: '" + "9" * 200 + "'"),
    ],
)
def test_a_checker_printing_hostile_json_scores_zero(tmp_path: Path, printed: str, error: str) -> None:
    result = run_checker(_task(f"print({printed})\n"), tmp_path)
    assert (result.score, result.metrics) == (0.0, {})
    assert result.error is not None and result.error[:300] == error[:300]


@pytest.mark.parametrize(
    ("returned", "error"),
    [
        ("10 ** 5000", "checker raised: unreportable value: Exceeds the limit (4300 digits)"),
        ("eval('[' * 100000 + ']' * 100000)", None),
    ],
)
def test_a_grade_returning_an_unreportable_value_scores_zero(
    tmp_path: Path, returned: str, error: Any
) -> None:
    result = run_checker(_task(f"def grade(t, w):\n    return {returned}\n"), tmp_path)
    assert (result.score, result.metrics) == (0.0, {})
    assert result.error is not None
    if error is not None:
        assert result.error.startswith(error), result.error
