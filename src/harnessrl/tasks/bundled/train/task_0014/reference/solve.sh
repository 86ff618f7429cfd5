#!/usr/bin/env bash
set -euo pipefail
mkdir -p out
python3 - <<'PY'
import csv, json
from collections import Counter, defaultdict
rev, units = defaultdict(float), Counter()
for r in csv.DictReader(open("data/sales.csv")):
    rev[r["region"]] += int(r["units"]) * float(r["unit_price"])
    units[r["product"]] += int(r["units"])
json.dump({k: round(rev[k], 2) for k in sorted(rev)}, open("out/revenue_by_region.json", "w"), indent=2)
open("out/top_product.txt", "w").write(units.most_common(1)[0][0] + "\n")
PY
