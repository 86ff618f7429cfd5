#!/usr/bin/env bash
set -euo pipefail
python3 - <<'PY'
import csv, json
org = json.load(open("org.json"))
names = {e["id"]: e["name"] for d in org["departments"] for e in d["employees"]}
rows = []
for d in org["departments"]:
    for e in d["employees"]:
        boss = "" if e["id"] == d["manager_id"] else names[d["manager_id"]]
        rows.append([e["id"], e["name"], e["title"], d["name"], boss])
rows.sort(key=lambda r: r[0])
with open("employees.csv", "w", newline="") as f:
    w = csv.writer(f, lineterminator="\n")
    w.writerow(["id", "name", "title", "department", "manager"])
    w.writerows(rows)
PY
