#!/usr/bin/env bash
set -euo pipefail
mkdir -p clean
python3 - <<'PY'
import json
best, bad = {}, 0
for line in open("logs/events.jsonl"):
    if not line.strip():
        continue
    try:
        e = json.loads(line)
    except ValueError:
        bad += 1
        continue
    if not isinstance(e, dict) or "id" not in e:
        bad += 1
        continue
    if e["id"] not in best or e["ts"] > best[e["id"]]["ts"]:
        best[e["id"]] = e
with open("clean/events.jsonl", "w") as f:
    for e in sorted(best.values(), key=lambda e: e["ts"]):
        f.write(json.dumps(e) + "\n")
open("clean/rejected.txt", "w").write(f"{bad}\n")
PY
