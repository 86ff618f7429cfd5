#!/usr/bin/env bash
set -euo pipefail
python3 - <<'PY'
from pathlib import Path
p = Path("requirements.txt")
lines = [l.strip() for l in p.read_text().splitlines() if l.strip()]
lines = [l for l in lines if not l.lower().startswith("nose")]
lines = ["requests==2.32.3" if l.lower().startswith("requests") else l for l in lines] + ["pytest==8.3.3"]
lines.sort(key=lambda l: l.lower())
p.write_text("\n".join(lines) + "\n")
PY
