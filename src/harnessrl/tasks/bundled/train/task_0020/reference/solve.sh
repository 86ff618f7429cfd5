#!/usr/bin/env bash
set -euo pipefail
python3 - <<'PY'
import csv
days = {}
for r in csv.DictReader(open("data/temps.csv")):
    v = r["temp_c"].strip()
    if v in ("", "NA"):
        continue
    days.setdefault(r["timestamp"][:10], []).append(float(v))
with open("data/daily_stats.csv", "w", newline="") as f:
    w = csv.writer(f, lineterminator="\n")
    w.writerow(["date", "readings", "min", "max", "mean"])
    for day in sorted(days):
        v = days[day]
        w.writerow([day, len(v), f"{min(v):.1f}", f"{max(v):.1f}", f"{sum(v) / len(v):.1f}"])
PY
