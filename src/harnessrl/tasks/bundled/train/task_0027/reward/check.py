"""task_0027 (code_fix): kvconfig.parse_config (blank/indented comments, first '=', strip, line-numbered
errors) and parse_bool (case, spaces).
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
    "indented_comment_skipped",
    "error_names_line",
    "last_duplicate_wins",
    "bool_case_and_space",
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


TEST_SHA = "943b33c792658577da406f09f2a465985fa6b7e9f5541f8dd3031ee421706ac5"
PROBE = """
import json, kvconfig as k
a = k.parse_config("  # indented note\\nname = api\\n\\n  url = http://x/?a=1&b=2  \\n")
try:
    k.parse_config("a = 1\\n\\nbroken line\\n")
    msg = ""
except ValueError as e:
    msg = str(e)
b = k.parse_config("mode = fast\\nmode = safe\\n")
try:
    c = [k.parse_bool(" OFF "), k.parse_bool("On"), k.parse_bool("1")]
except Exception as e:
    c = repr(e)
print(json.dumps([a, msg, b, c]))
"""


def _score(ws: Path, s: dict) -> None:
    test = ws / "test_kvconfig.py"
    s["tests_unmodified"] = float(
        test.is_file() and hashlib.sha256(test.read_bytes()).hexdigest() == TEST_SHA
    )
    code, out = _unittest(ws)
    s["tests_pass"] = float(code == 0 and _tests_ran(out) >= 6 and s["tests_unmodified"] == 1.0)
    got = _probe(ws, PROBE)
    if not isinstance(got, list) or len(got) != 4:
        return
    s["indented_comment_skipped"] = float(got[0] == {"name": "api", "url": "http://x/?a=1&b=2"})
    s["error_names_line"] = float(isinstance(got[1], str) and "line 3" in got[1])
    s["last_duplicate_wins"] = float(got[2] == {"mode": "safe"})
    s["bool_case_and_space"] = float(got[3] == [False, True, True])


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
