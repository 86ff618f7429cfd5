#!/usr/bin/env bash
set -euo pipefail
python3 - <<'PY'
import json
from pathlib import Path
p = Path("app/config.json")
data = json.loads(p.read_text())
data["logging"]["level"] = "debug"
data["cache"]["enabled"] = False
data["features"] = {"beta_search": True}
p.write_text(json.dumps(data, indent=2) + "\n")
PY
