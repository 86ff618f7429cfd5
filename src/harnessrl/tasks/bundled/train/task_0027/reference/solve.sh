#!/usr/bin/env bash
set -euo pipefail
python3 - <<'PY'
from pathlib import Path
p = Path("kvconfig.py")
src = p.read_text()
old_loop = src[src.index("    for number, line in"):src.index("    return result")]
new_loop = '''    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if "=" not in line:
            raise ValueError(f"line {number}: expected 'key = value', got {raw!r}")
        key, value = line.split("=", 1)
        result[key.strip()] = value.strip()
'''
src = src.replace(old_loop, new_loop)
src = src.replace("    v = value\n", "    v = value.strip().lower()\n")
p.write_text(src)
PY
