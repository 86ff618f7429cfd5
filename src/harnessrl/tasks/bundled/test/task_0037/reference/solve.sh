#!/usr/bin/env bash
set -euo pipefail
python3 - <<'PY'
import csv
from pathlib import Path
p = Path("contacts.csv")
rows = list(csv.reader(p.open(encoding="utf-8")))
rows[0] = ["email" if h == "e-mail" else h for h in rows[0]]
for r in rows[1:]:
    r[1] = r[1].lower()
with p.open("w", newline="", encoding="utf-8") as f:
    csv.writer(f, lineterminator="\n").writerows(rows)
PY
