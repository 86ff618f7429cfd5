"""task_0025 (code_fix): leap-year century rule and month-end clamping in add_months (also negative and >12
offsets).
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
    "leap_century_hidden",
    "clamp_leap_february",
    "negative_months",
    "multi_year_offset",
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


TEST_SHA = "9c74d029dcb3cbdd5180cc967e42218ece8dab951e49ddc5963c18246afdfd35"
PROBE = """
import json, sys
sys.path.insert(0, "billing")
from datetime import date
import dates as d
print(json.dumps([d.is_leap_year(2100), d.is_leap_year(2400), str(d.add_months(date(2024, 1, 31), 1)),
                  str(d.add_months(date(2026, 3, 31), -1)), str(d.add_months(date(2026, 5, 31), 13))]))
"""


def _score(ws: Path, s: dict) -> None:
    test = ws / "billing" / "test_dates.py"
    s["tests_unmodified"] = float(
        test.is_file() and hashlib.sha256(test.read_bytes()).hexdigest() == TEST_SHA
    )
    code, out = _unittest_dir(ws / "billing")
    s["tests_pass"] = float(code == 0 and _tests_ran(out) >= 6 and s["tests_unmodified"] == 1.0)
    got = _probe(ws, PROBE)
    if not isinstance(got, list) or len(got) != 5:
        return
    s["leap_century_hidden"] = float(got[0] is False and got[1] is True)
    s["clamp_leap_february"] = float(got[2] == "2024-02-29")
    s["negative_months"] = float(got[3] == "2026-02-28")
    s["multi_year_offset"] = float(got[4] == "2027-06-30")


def _unittest_dir(path: Path) -> tuple[int, str]:
    """The tests import `dates` as a top-level module, so they run from inside billing/."""
    return _unittest(path) if path.is_dir() else (-1, "no billing/ folder")


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
