"""Reading what a harness printed. The output is untrusted (commands the model runs can write into
it): every helper here returns a value whatever the bytes, or raises HarnessError, the one error an
adapter's `parse` may raise."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from harnessrl.formats import untrusted_json
from harnessrl.harnesses.adapter import HarnessResult
from harnessrl.sandbox.spec import ExecResult
from harnessrl.types import HarnessError


def json_lines(text: str) -> Iterator[dict[str, Any]]:
    """The JSON objects of a JSONL stream, skipping lines that are not JSON objects (log noise).

    A line that is valid JSON but past what the parser takes (nested too deep, an integer over 4,300
    digits) raises HarnessError; no harness prints such a line."""
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            obj = load_json(line)
            if isinstance(obj, dict):
                yield obj


def load_json(text: str) -> Any:
    """Harness output decoded by the one untrusted-JSON decoder (`formats.untrusted_json`): None for
    text that is not JSON, HarnessError for JSON past its limits (deeper than 256, an integer over
    4,300 digits). Lone surrogates are kept: `as_text` replaces them."""
    try:
        return untrusted_json.loads(text, "line", keep_surrogates=True)
    except untrusted_json.UntrustedJSONError as e:
        if e.not_json:
            return None
        raise HarnessError(f"the harness's output holds JSON that cannot be read: {e}") from None


def as_text(value: Any) -> str:
    """A string field of harness output as text: strings as they are (lone surrogates, which no
    encoder takes, replaced), numbers written out, anything else (null, lists, objects) empty."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, float) or (isinstance(value, int) and not isinstance(value, bool)):
        return str(value) if abs(value) < 1e18 else ""  # str() of a 5,000-digit int raises
    return ""


def as_count(value: Any) -> int | None:
    """A count field of harness output (turns): a non-negative int below 2**31, else None."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**31:
        return value
    return None


def as_dict(value: Any) -> dict[str, Any]:
    """A field that should be an object: itself when it is one, else empty."""
    return value if isinstance(value, dict) else {}


def clean_text(text: str) -> str:
    """`text` with lone surrogates (from `\\ud800` escapes in JSON) replaced, so it can be written."""
    return text if untrusted_json.is_text(text) else text.encode("utf-8", "replace").decode("utf-8")


def stderr_tail(res: ExecResult, limit: int = 2000) -> str:
    """Why a run failed, when the harness did not say: the end of stderr (or the start error)."""
    return clean_text((res.error or res.stderr.strip() or res.stdout.strip())[-limit:])


def outcome(
    res: ExecResult, *, done: bool, final: str = "", errors: Sequence[str] = (), turns: int | None = None
) -> HarnessResult:
    """The usual ending: ok when the harness exited 0 in time, `done` (it reported finishing) and
    reported no errors; the error is its own reports joined, else the end of stderr, cleaned like the
    final text (a lone surrogate from a JSON `\udc80` escape would fail when the rollout is written)."""
    ok = res.returncode == 0 and not res.timed_out and done and not errors
    error = clean_text("; ".join(errors)) if errors else ("" if ok else stderr_tail(res))
    return HarnessResult(
        ok=ok,
        exit_code=res.returncode,
        final_message=clean_text(final),
        timed_out=res.timed_out,
        error=error,
        turns=turns,
    )


def parse_result_event(res: ExecResult) -> HarnessResult:
    """A `--output-format stream-json` run (Claude Code, Qwen Code): the last `{"type": "result"}`
    event carries the final text, the error flag (`is_error`, `subtype`) and the turn count."""
    result = None
    for event in json_lines(res.stdout):
        if event.get("type") == "result":
            result = event
    if result is None:
        return outcome(res, done=False)
    is_error = bool(result.get("is_error")) or result.get("subtype") != "success"
    final = as_text(result.get("result")) if isinstance(result.get("result"), str) else ""
    # an error's `subtype` may still say "success": the reason is in the result text
    errors = [f"{as_text(result.get('subtype'))}: {final}".strip(": ")] if is_error else []
    return outcome(res, done=True, final=final, errors=errors, turns=as_count(result.get("num_turns")))


def parse_plain_text(res: ExecResult) -> HarnessResult:
    """A harness whose final message is its plain stdout (Continue's and Hermes' quiet modes): ok on
    a clean exit, the end of stderr as the error."""
    return outcome(res, done=True, final=res.stdout.strip())
