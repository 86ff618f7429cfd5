"""Checker driver: runs inside the checker's own process, never imported by harnessrl.

    python3 -I -B driver.py ENTRY WORKSPACE TRANSCRIPT_JSON RESULT_JSON

- ENTRY defines `grade(transcript, workspace_path)`: it is imported (not as `__main__`) and `grade`
  is called; the returned value goes to RESULT_JSON as {"mode": "grade", "value": ...}.
- ENTRY defines `main()` but has no `if __name__ == "__main__"` guard: it is imported and `main()`
  is called with argv[1] = WORKSPACE; the parent parses the process's stdout.
- Otherwise ENTRY is run as `__main__` with argv[1] = WORKSPACE, exactly as `reward.sh` would.

Any exception is written to RESULT_JSON as {"mode": ..., "error": traceback}. Stdlib only: the
checker's python may be any python3.
"""

import ast
import importlib.util
import json
import os
import runpy
import sys
import traceback
from typing import Any


def _write(path: str, payload: dict[str, Any]) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(payload, fh, default=repr)


def _shape(source: str) -> tuple[bool, bool, bool]:
    tree = ast.parse(source)
    names = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    guarded = "__main__" in source and "__name__" in source
    return "grade" in names, "main" in names, guarded


def _import(entry: str) -> Any:
    spec = importlib.util.spec_from_file_location("harnessrl_checker", entry)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {entry}")
    module = importlib.util.module_from_spec(spec)
    sys.modules["harnessrl_checker"] = module
    spec.loader.exec_module(module)
    return module


def main() -> None:
    entry, workspace, transcript_path, result_path = sys.argv[1:5]
    with open(transcript_path, encoding="utf-8") as fh:
        transcript = json.load(fh)
    sys.path.insert(0, os.path.dirname(os.path.abspath(entry)))
    mode = "script"
    try:
        with open(entry, encoding="utf-8") as fh:
            has_grade, has_main, guarded = _shape(fh.read())
        sys.argv = [entry, workspace]
        if has_grade:
            mode = "grade"
            value = _import(entry).grade(transcript, workspace)
            sys.stdout.flush()
            _write(result_path, {"mode": mode, "value": value})
            return
        if has_main and not guarded:
            mode = "main"
            _import(entry).main()
        else:
            runpy.run_path(entry, run_name="__main__")
    except SystemExit as e:
        if e.code not in (None, 0):
            _write(result_path, {"mode": mode, "exit_status": e.code})
            return
    except BaseException:
        _write(result_path, {"mode": mode, "error": traceback.format_exc()[-4000:]})
        return
    sys.stdout.flush()
    _write(result_path, {"mode": mode})


if __name__ == "__main__":
    main()
