#!/usr/bin/env bash
set -euo pipefail
python3 - <<'PY'
import csv, json
items = json.load(open("inventory.json"))["items"]
rows = [(i["sku"], i["name"], i["reorder_level"] - i["qty"]) for i in items
        if not i["discontinued"] and i["qty"] < i["reorder_level"]]
rows.sort(key=lambda r: (-r[2], r[0]))
with open("reorder.csv", "w", newline="") as f:
    w = csv.writer(f, lineterminator="\n")
    w.writerow(["sku", "name", "shortfall"])
    w.writerows(rows)
PY
