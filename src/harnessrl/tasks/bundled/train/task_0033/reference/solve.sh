#!/usr/bin/env bash
set -euo pipefail
python3 - <<'PY'
import json
from collections import Counter
tests = json.load(open("ci/results.json"))["tests"]
n = Counter(t["outcome"] for t in tests)
ran = len(tests) - n["skipped"]
out = ["# Integration test run", "", "## Overview", "", f"Pass rate: {n['passed'] / ran * 100:.1f}%", "",
       "| Outcome | Count |", "|---|---:|"]
out += [f"| {k} | {n[k]} |" for k in ("passed", "failed", "error", "skipped")]
out += ["", "## Problems", "", "| Test | Outcome | Duration (s) | Message |", "|---|---|---:|---|"]
bad = sorted((t for t in tests if t["outcome"] in ("failed", "error")), key=lambda t: -t["duration"])
out += [f"| {t['name']} | {t['outcome']} | {t['duration']} | {t['message']} |" for t in bad]
out += ["", "## Slowest tests", ""]
slow = sorted(tests, key=lambda t: -t["duration"])[:3]
out += [f"{i}. {t['name']} ({t['duration']} s)" for i, t in enumerate(slow, 1)]
open("ci/test_report.md", "w").write("\n".join(out) + "\n")
PY
