#!/usr/bin/env bash
set -euo pipefail
python3 - <<'PY'
import json
from collections import Counter
rows = [json.loads(l) for l in open("survey/responses.jsonl") if l.strip()]
real = [r for r in rows if not r.get("test", False)]
out = {"responses": len(real)}
for q in ("remote", "office"):
    out[q] = dict(Counter(r["answers"][q] for r in real if q in r["answers"]))
sat = [r["answers"]["satisfaction"] for r in real if "satisfaction" in r["answers"]]
out["satisfaction_avg"] = round(sum(sat) / len(sat), 2)
json.dump(out, open("survey/results.json", "w"), indent=2)
PY
