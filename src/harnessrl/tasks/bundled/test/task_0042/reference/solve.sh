#!/usr/bin/env bash
set -euo pipefail
python3 - <<'PY'
import csv
from collections import Counter
from datetime import date, timedelta
weeks, pages = Counter(), Counter()
for r in csv.DictReader(open("analytics/traffic.csv")):
    d = date.fromisoformat(r["date"])
    weeks[d - timedelta(days=d.weekday())] += int(r["visits"])
    pages[r["page"]] += int(r["visits"])
out = ["# Traffic report", "", "## Weekly totals", "", "| Week starting | Visits |", "|---|---:|"]
out += [f"| {w.isoformat()} | {v} |" for w, v in sorted(weeks.items())]
out += ["", "## Top pages", ""]
out += [f"{i}. {p}: {v}" for i, (p, v) in enumerate(pages.most_common(3), 1)]
out += ["", "## Total", "", f"There were {sum(pages.values())} visits in total.", ""]
open("analytics/traffic_report.md", "w").write("\n".join(out))
PY
