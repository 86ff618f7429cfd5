"""task_0026 (code_fix): Cart.remove decrements quantities (KeyError for unknown sku), total() rounds half-up
to the cent.
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
    "partial_remove",
    "remove_all_units",
    "unknown_sku_keyerror",
    "discount_rounding",
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


TEST_SHA = "478f80bf6d18453d94f55593e82b95141c90c3b75b1f8364d1bcb31c760c4d2b"
PROBE = """
import json, sys
sys.path.insert(0, "shop")
from cart import Cart
c = Cart()
c.add("pen", 150, 5)
c.add("pad", 251, 2)
c.remove("pen", 2)
a = c.item_count()
c.remove("pad", 2)
b = sorted(c.lines())
try:
    c.remove("ink")
    err = "no error"
except KeyError:
    err = "KeyError"
except Exception as e:
    err = type(e).__name__
d = Cart()
d.add("lamp", 1001, 1)
print(json.dumps([a, b, err, d.total(15), d.total(0)]))
"""


def _score(ws: Path, s: dict) -> None:
    test = ws / "shop" / "test_cart.py"
    s["tests_unmodified"] = float(
        test.is_file() and hashlib.sha256(test.read_bytes()).hexdigest() == TEST_SHA
    )
    try:
        done = subprocess.run(
            [
                sys.executable, "-I", "-B", "-c",
                f"import sys, unittest; sys.path.append({str(ws)!r}); unittest.main(module=None, argv=['unittest', 'discover', '-s', 'shop', '-v'])",
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
    if not isinstance(got, list) or len(got) != 5:
        return
    s["partial_remove"] = float(got[0] == 5)
    s["remove_all_units"] = float(got[1] == [["pen", 150, 3]])
    s["unknown_sku_keyerror"] = float(got[2] == "KeyError")
    s["discount_rounding"] = float(got[3] == 851 and got[4] == 1001)


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
