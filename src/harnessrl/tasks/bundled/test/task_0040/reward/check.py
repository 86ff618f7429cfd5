"""task_0040 (code_fix): roman.to_roman/from_roman with subtractive notation, round trip over 1..3999,
ValueError out of range.
"""

import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path

KEYS = (
    "tests_pass",
    "tests_unmodified",
    "to_roman_hidden",
    "from_roman_hidden",
    "round_trip_all",
    "range_errors",
)


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _tests_ran(out: str) -> int:
    """How many tests unittest says it ran (0 if it never got that far)."""
    found = re.findall(r"^Ran (\d+) tests? in ", out, flags=re.M)
    return int(found[-1]) if found else 0


def _probe(ws: Path, code: str, timeout: float = 20.0):
    """Run `code` with python3 in the workspace (isolated: -I, the workspace appended to sys.path, so a
    planted json.py cannot shadow the standard library); return the JSON it prints last (None on failure)."""
    try:
        done = subprocess.run(
            [sys.executable, "-I", "-B", "-c", f"import sys; sys.path.append({str(ws)!r})\n" + code],
            cwd=ws, capture_output=True, text=True, timeout=timeout
        )
        lines = done.stdout.strip().splitlines()
        return json.loads(lines[-1]) if done.returncode == 0 and lines else None
    except Exception:
        return None


def _unittest(ws: Path, timeout: float = 60.0) -> tuple[int, str]:
    """Run the workspace's unit tests (`python3 -I`: a planted unittest.py is not imported); return (exit code,
    combined output)."""
    try:
        done = subprocess.run(
            [sys.executable, "-I", "-B", "-m", "unittest", "discover", "-s", str(ws), "-t", str(ws), "-v"],
            cwd=ws,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        return done.returncode, done.stdout + done.stderr
    except Exception as exc:
        return -1, repr(exc)


TEST_SHA = "5a090d1c0caff895ad4fe44b46d28ccf4cb91949ca234846d19017cc26f1b4c4"
PROBE = """
import json, roman as r
def safe(f):
    try:
        return f()
    except Exception as e:
        return "ERR:" + type(e).__name__
print(json.dumps([
    safe(lambda: [r.to_roman(n) for n in (4, 14, 40, 90, 400, 1994, 3999)]),
    safe(lambda: [r.from_roman(s) for s in ("XLII", "CDXLIV", "MCMXC", "MMXXVI")]),
    safe(lambda: all(r.from_roman(r.to_roman(n)) == n for n in range(1, 4000))),
    [safe(lambda: r.to_roman(0)), safe(lambda: r.to_roman(4000)), safe(lambda: r.to_roman(-3))],
]))
"""


def _score(ws: Path, s: dict) -> None:
    test = ws / "test_roman.py"
    s["tests_unmodified"] = float(
        test.is_file() and hashlib.sha256(test.read_bytes()).hexdigest() == TEST_SHA
    )
    code, out = _unittest(ws)
    s["tests_pass"] = float(code == 0 and _tests_ran(out) >= 4 and s["tests_unmodified"] == 1.0)
    got = _probe(ws, PROBE)
    if not isinstance(got, list) or len(got) != 4:
        return
    s["to_roman_hidden"] = float(got[0] == ["IV", "XIV", "XL", "XC", "CD", "MCMXCIV", "MMMCMXCIX"])
    s["from_roman_hidden"] = float(got[1] == [42, 444, 1990, 2026])
    s["round_trip_all"] = float(got[2] is True)
    s["range_errors"] = float(got[3] == ["ERR:ValueError"] * 3)


def grade(transcript: list, workspace_path: str) -> dict:
    """Each value is 0.0 or 1.0; the task score is their mean. Never raises."""
    scores = {key: 0.0 for key in KEYS}
    try:
        _score(Path(workspace_path), scores)
    except BaseException:  # garbage in the workspace must cost metrics, not crash the checker
        pass
    return scores


def main() -> None:
    workspace_path = sys.argv[1] if len(sys.argv) > 1 else "."
    print(json.dumps(grade([], workspace_path), indent=2))


if __name__ == "__main__":
    main()
