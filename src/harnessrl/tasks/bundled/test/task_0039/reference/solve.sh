#!/usr/bin/env bash
set -euo pipefail
python3 - <<'PY'
import csv
best = {}
for r in csv.DictReader(open("books.csv")):
    key = "".join(c for c in r["isbn"] if c.isdigit())
    if key not in best or int(r["year"]) > int(best[key]["year"]):
        best[key] = dict(r, isbn=key)
rows = sorted(best.values(), key=lambda r: (r["author"].split()[-1], r["title"]))
with open("catalog.csv", "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=["isbn", "title", "author", "year"], lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
PY
