"""task_0028 (code_fix): 1-based paginate slicing, page_count without the extra page (0 for no items),
ValueError on bad arguments.
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
    "first_page_hidden",
    "page_count_exact_multiple",
    "page_count_empty",
    "bad_per_page_valueerror",
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


TEST_SHA = "be7b1f7bb35c88d121eb02ccc778fa316be1156f9119ea6c7349d3cb2eff618d"
PROBE = """
import json, sys
sys.path.insert(0, "api")
import pagination as p
def safe(f):
    try:
        return f()
    except Exception as e:
        return "ERR:" + type(e).__name__
print(json.dumps([
    safe(lambda: p.paginate(list("abcdef"), 1, 4)), safe(lambda: p.paginate(list("abcdef"), 2, 4)),
    safe(lambda: [p.page_count(12, 4), p.page_count(13, 4)]), safe(lambda: [p.page_count(0, 5), p.page_count(1, 5)]),
    safe(lambda: p.paginate([1, 2], 1, 0)), safe(lambda: p.page_count(5, 0)),
]))
"""


def _score(ws: Path, s: dict) -> None:
    test = ws / "api" / "test_pagination.py"
    s["tests_unmodified"] = float(
        test.is_file() and hashlib.sha256(test.read_bytes()).hexdigest() == TEST_SHA
    )
    try:
        done = subprocess.run(
            [
                sys.executable, "-I", "-B", "-c",
                f"import sys, unittest; sys.path.append({str(ws)!r}); unittest.main(module=None, argv=['unittest', 'discover', '-s', 'api', '-v'])",
            ],
            cwd=ws,
            capture_output=True,
            text=True,
            timeout=60,
        )
        code, out = done.returncode, done.stdout + done.stderr
    except Exception:
        code, out = -1, ""
    s["tests_pass"] = float(code == 0 and _tests_ran(out) >= 5 and s["tests_unmodified"] == 1.0)
    got = _probe(ws, PROBE)
    if not isinstance(got, list) or len(got) != 6:
        return
    s["first_page_hidden"] = float(got[0] == ["a", "b", "c", "d"] and got[1] == ["e", "f"])
    s["page_count_exact_multiple"] = float(got[2] == [3, 4])
    s["page_count_empty"] = float(got[3] == [0, 1])
    s["bad_per_page_valueerror"] = float(got[4] == "ERR:ValueError" and got[5] == "ERR:ValueError")


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
