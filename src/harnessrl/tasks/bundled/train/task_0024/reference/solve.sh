#!/usr/bin/env bash
set -euo pipefail
python3 - <<'PY'
from pathlib import Path
p = Path("stats.py")
src = p.read_text()
src = src.replace("    return sum(values) / len(values)\n",
                  "    if not values:\n        raise ValueError(\"mean of an empty sequence\")\n"
                  "    return sum(values) / len(values)\n", 1)
src = src.replace("    xs = sorted(values)\n",
                  "    xs = sorted(values)\n    if not xs:\n        raise ValueError(\"median of an empty sequence\")\n")
src = src.replace("(xs[mid] + xs[mid + 1]) / 2", "(xs[mid - 1] + xs[mid]) / 2")
p.write_text(src)
PY
