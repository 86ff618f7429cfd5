#!/usr/bin/env bash
set -euo pipefail
python3 - <<'PY'
import csv
latest = {}
for r in csv.DictReader(open("eval/benchmarks.csv")):
    key = (r["model"], r["dataset"])
    if key not in latest or int(r["run"]) > int(latest[key]["run"]):
        latest[key] = r
models = sorted({m for m, _ in latest})
datasets = sorted({d for _, d in latest})
out = ["# Benchmark results", "", "## Results", "", "| Model | " + " | ".join(datasets) + " |",
       "|---" * (len(datasets) + 1) + "|"]
for m in models:
    cells = [f"{float(latest[(m, d)]['score']):.1f}" if (m, d) in latest else "-" for d in datasets]
    out.append(f"| {m} | " + " | ".join(cells) + " |")
out += ["", "## Best model per dataset", ""]
for d in datasets:
    m = max((m for m in models if (m, d) in latest), key=lambda m: float(latest[(m, d)]["score"]))
    out.append(f"- {d}: {m} ({float(latest[(m, d)]['score']):.1f})")
open("eval/results.md", "w").write("\n".join(out) + "\n")
PY
