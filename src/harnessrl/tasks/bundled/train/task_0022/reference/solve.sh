#!/usr/bin/env bash
set -euo pipefail
mkdir -p out
python3 - <<'PY'
import csv, json
rates = dict(json.load(open("data/rates.json"))["rates"], EUR=1.0)
totals, flagged = {}, []
for t in csv.DictReader(open("data/transactions.csv")):
    eur = float(t["amount"]) / rates[t["currency"]]
    totals[t["account"]] = totals.get(t["account"], 0.0) + eur
    if eur > 1000:
        flagged.append(t["tx_id"])
json.dump({k: round(v, 2) for k, v in sorted(totals.items())}, open("out/eur_totals.json", "w"), indent=2)
open("out/flagged.txt", "w").write("".join(f"{i}\n" for i in sorted(flagged)))
PY
