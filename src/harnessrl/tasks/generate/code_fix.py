"""code_fix: a one-line bug in a tiny python module (`sed -i 's/v = a - b/v = a + b/' calc.py`).

The module has the buggy function and a correct one that uses the buggy operator on purpose. Wrong
answer: replacing the operator everywhere (`s/a - b/a + b/g`), which breaks the correct function.
The checker compiles the module in its own process (nothing runs) and calls both functions in a
separate `python3 -I` process with a 20 s limit, so agent code never runs inside the checker.
"""

from __future__ import annotations

import random

from harnessrl.tasks.generate.base import Family, Instance

MODULES = ("calc", "mathops", "util", "arith")
VARIABLES = ("result", "total", "value", "out")
# (function to fix, its operator, the bug's operator, a correct function that uses the bug's operator)
VARIANTS = (
    ("add", "+", "-", "sub"),
    ("sub", "-", "+", "add"),
    ("mul", "*", "+", "add"),
    ("add", "+", "*", "mul"),
)
CASES = ((2, 3), (7, 4), (-1, 5), (0, 9))
APPLY = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b}

BODY = """
PROBE = (
    "import json, sys; sys.path.insert(0, '.'); import importlib; m = importlib.import_module(sys.argv[1]); "
    "cases = json.loads(sys.argv[2]); print(json.dumps([[getattr(m, f)(a, b) for a, b in cases] "
    "for f in sys.argv[3:]]))"
)


def _score(ws, s, E):
    source = _read(ws / (E["module"] + ".py"))
    if source is None:
        return
    compile(source, "module.py", "exec")
    s["module_compiles"] = 1.0
    argv = [sys.executable, "-I", "-B", "-c", PROBE, E["module"], json.dumps(E["cases"])]
    argv += [E["fix"], E["other"]]
    out = subprocess.run(argv, cwd=ws, capture_output=True, text=True, timeout=20)
    fixed, other = json.loads(out.stdout.strip().splitlines()[-1])
    s["fixed_function_correct"] = float(fixed == E["fixed_values"])
    s["other_function_correct"] = float(other == E["other_values"])
"""
SUMMARY = "the module compiles, the buggy function is fixed, the other function still correct."
METRICS = ("module_compiles", "fixed_function_correct", "other_function_correct")


def _pattern(op: str) -> str:
    return "\\*" if op == "*" else op


def make(rng: random.Random) -> Instance:
    module, var = rng.choice(MODULES), rng.choice(VARIABLES)
    fix, good, bug, other = rng.choice(VARIANTS)
    source = f"def {fix}(a, b):\n    {var} = a {bug} b\n    return {var}\n\n\n"
    source += f"def {other}(a, b):\n    return a {bug} b\n"
    path = f"{module}.py"
    return Instance(
        prompt=f"{fix}(a, b) in {path} returns the wrong value. Fix it so that it returns a {good} b.",
        files={path: source},
        expected={
            "module": module,
            "fix": fix,
            "other": other,
            "cases": [list(c) for c in CASES],
            "fixed_values": [APPLY[good](a, b) for a, b in CASES],
            "other_values": [APPLY[bug](a, b) for a, b in CASES],
        },
        solve=f"sed -i 's/{var} = a {_pattern(bug)} b/{var} = a {good} b/' {path}",
        wrong=f"sed -i 's/a {_pattern(bug)} b/a {good} b/g' {path}",
    )


FAMILY = Family(name="code_fix", metrics=METRICS, check_body=BODY, make=make, summary=SUMMARY)
