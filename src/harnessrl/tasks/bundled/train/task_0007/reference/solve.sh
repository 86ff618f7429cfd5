#!/usr/bin/env bash
set -euo pipefail
python3 - <<'PY'
from pathlib import Path
p = Path("settings.ini")
out = []
section = None
for line in p.read_text().splitlines():
    if line.startswith("["):
        section = line.strip("[]")
    if section == "server" and line.startswith("port"):
        out.append("port = 9090")
        out.append("workers = 4")
        continue
    out.append(line)
p.write_text("\n".join(out) + "\n")
PY
