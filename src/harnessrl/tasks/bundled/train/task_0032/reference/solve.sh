#!/usr/bin/env bash
set -euo pipefail
python3 - <<'PY'
import csv
rows = [(r["department"], int(r["planned"]), int(r["actual"])) for r in csv.DictReader(open("finance/budget.csv"))]
rows = [(d, p, a, a - p, (a - p) / p * 100) for d, p, a in rows]
rows.sort(key=lambda r: -r[4])
P, A = sum(r[1] for r in rows), sum(r[2] for r in rows)
out = ["# Budget review", "", "## Summary", "",
       f"Total variance is {A - P} ({(A - P) / P * 100:.1f}% of the planned {P}).", "",
       "## By department", "", "| Department | Planned | Actual | Variance | Variance % |", "|---|---:|---:|---:|---:|"]
out += [f"| {d} | {p} | {a} | {v} | {pc:.1f} |" for d, p, a, v, pc in rows]
out += [f"| Total | {P} | {A} | {A - P} | {(A - P) / P * 100:.1f} |", "", "## Over budget", ""]
out += [f"- {d}" for d, p, a, v, pc in rows if a > p]
open("finance/budget_review.md", "w").write("\n".join(out) + "\n")
PY
