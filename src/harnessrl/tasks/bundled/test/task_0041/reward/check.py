"""task_0041 (code_fix): csvsum CLI skips empty/short rows, two-decimal output, clean unknown-column error
with exit 1. Probed as a subprocess.
"""

import hashlib
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

KEYS = (
    "tests_pass",
    "tests_unmodified",
    "short_rows_skipped",
    "spaces_and_negatives",
    "unknown_column_clean",
    "usage_exit_2",
)


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _tests_ran(out: str) -> int:
    """How many tests unittest says it ran (0 if it never got that far)."""
    found = re.findall(r"^Ran (\d+) tests? in ", out, flags=re.M)
    return int(found[-1]) if found else 0


TEST_SHA = "10dd57f40553582ebc86f4605c33791801b9cbbd1c3b5cdd9bca1d507ef7653e"


def _run(ws: Path, *args: str) -> tuple[int, str, str]:
    try:
        done = subprocess.run(
            [sys.executable, "-I", "-B", str(ws / "tools" / "csvsum.py"), *args],
            cwd=ws,
            capture_output=True,
            text=True,
            timeout=10,
        )
        return done.returncode, done.stdout.strip(), done.stderr
    except Exception:
        return -1, "", ""


def _score(ws: Path, s: dict) -> None:
    test = ws / "tools" / "test_csvsum.py"
    s["tests_unmodified"] = float(
        test.is_file() and hashlib.sha256(test.read_bytes()).hexdigest() == TEST_SHA
    )
    try:
        done = subprocess.run(
            [sys.executable, "-I", "-B", "-m", "unittest", "discover", "-s", str(ws / "tools"), "-v"],
            cwd=ws,
            capture_output=True,
            text=True,
            timeout=60,
        )
        code, out = done.returncode, done.stdout + done.stderr
    except Exception:
        code, out = -1, ""
    s["tests_pass"] = float(code == 0 and _tests_ran(out) >= 4 and s["tests_unmodified"] == 1.0)
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "d.csv"
        data.write_text("id,qty,price\r\n1,2, 3.5 \r\n2\r\n3,1,-1.25\r\n4,5,\r\n", encoding="utf-8")
        s["short_rows_skipped"] = float(_run(ws, str(data), "qty")[:2] == (0, "8.00"))
        s["spaces_and_negatives"] = float(_run(ws, str(data), "price")[:2] == (0, "2.25"))
        rc, out, err = _run(ws, str(data), "weight")
        s["unknown_column_clean"] = float(
            rc == 1 and "unknown column: weight" in err and "Traceback" not in err and out == ""
        )
        s["usage_exit_2"] = float(_run(ws, str(data))[0] == 2)


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
