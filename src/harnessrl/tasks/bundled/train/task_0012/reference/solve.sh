#!/usr/bin/env bash
set -euo pipefail
python3 - <<'PY'
from pathlib import Path
p = Path(".dockerignore")
out = []
for line in p.read_text().splitlines():
    if line.strip() and line.strip() not in out:
        out.append(line.strip())
for need in ["__pycache__/", "*.log", ".venv/"]:
    if need not in out:
        out.append(need)
p.write_text("\n".join(out) + "\n")
PY
