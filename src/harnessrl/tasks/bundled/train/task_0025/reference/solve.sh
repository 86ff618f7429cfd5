#!/usr/bin/env bash
set -euo pipefail
python3 - <<'PY'
from pathlib import Path
p = Path("billing/dates.py")
src = p.read_text()
src = src.replace("    return year % 4 == 0\n",
                  "    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)\n")
src = src.replace("    day = d.day\n", "    day = min(d.day, days_in_month(year, month))\n")
p.write_text(src)
PY
