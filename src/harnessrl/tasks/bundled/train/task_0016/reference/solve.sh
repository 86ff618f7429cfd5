#!/usr/bin/env bash
set -euo pipefail
mkdir -p report
python3 - <<'PY'
import csv
customers = list(csv.DictReader(open("data/customers.csv")))
paid = [o for o in csv.DictReader(open("data/orders.csv")) if o["status"] == "paid"]
rows = []
for c in customers:
    mine = [float(o["amount"]) for o in paid if o["customer_id"] == c["customer_id"]]
    rows.append((c["customer_id"], c["name"], len(mine), round(sum(mine), 2)))
rows.sort(key=lambda r: (-r[3], r[0]))
with open("report/customer_totals.csv", "w", newline="") as f:
    w = csv.writer(f, lineterminator="\n")
    w.writerow(["customer_id", "name", "order_count", "total"])
    w.writerows([r[0], r[1], r[2], f"{r[3]:.2f}"] for r in rows)
PY
