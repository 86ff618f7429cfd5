"""task_0023 (code_fix): textutils.slugify collapses/strips hyphens; truncate_words keeps texts of exactly
`limit` words. Tests unmodified.
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
    "slug_collapses_separators",
    "slug_strips_edges",
    "truncate_exact_limit",
    "truncate_still_cuts",
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


TEST_SHA = "2ffa7f73f6d10224f66ce8490fd746123cd2c834283bee57ff9f4054a1b56456"
PROBE = """
import json, textutils as t
print(json.dumps([
    t.slugify("C++ & Rust: 2026 edition"),
    t.slugify("--- Ünïcödé ---"),
    t.truncate_words("alpha beta gamma", 3),
    t.truncate_words("x y z w", 3),
]))
"""


def _score(ws: Path, s: dict) -> None:
    test = ws / "test_textutils.py"
    s["tests_unmodified"] = float(
        test.is_file() and hashlib.sha256(test.read_bytes()).hexdigest() == TEST_SHA
    )
    code, out = _unittest(ws)
    s["tests_pass"] = float(code == 0 and _tests_ran(out) >= 5 and s["tests_unmodified"] == 1.0)
    got = _probe(ws, PROBE)
    if not isinstance(got, list) or len(got) != 4:
        return
    s["slug_collapses_separators"] = float(got[0] == "c-rust-2026-edition")
    s["slug_strips_edges"] = float(got[1] == "unicode")
    s["truncate_exact_limit"] = float(got[2] == "alpha beta gamma")
    s["truncate_still_cuts"] = float(got[3] == "x y z...")


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
