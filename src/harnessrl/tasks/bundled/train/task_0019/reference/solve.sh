#!/usr/bin/env bash
set -euo pipefail
python3 - <<'PY'
import csv, json, statistics
scores = {}
for r in csv.DictReader(open("grades.csv")):
    scores.setdefault(r["student"], [])
    if r["score"].strip():
        scores[r["student"]].append(float(r["score"]))
avg = {k: sum(v) / len(v) for k, v in scores.items()}
def letter(a):
    return "A" if a >= 90 else "B" if a >= 80 else "C" if a >= 70 else "D" if a >= 60 else "F"
out = {"students": {k: {"average": round(a, 1), "grade": letter(a)} for k, a in avg.items()},
       "class_median": round(statistics.median(avg.values()), 1),
       "top_student": max(avg, key=avg.get)}
json.dump(out, open("summary.json", "w"), indent=2)
PY
