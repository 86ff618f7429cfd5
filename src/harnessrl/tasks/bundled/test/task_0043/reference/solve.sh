#!/usr/bin/env bash
set -euo pipefail
python3 - <<'PY'
import json
from collections import Counter, defaultdict
commits = json.load(open("repo/commits.json"))["commits"]
names = defaultdict(Counter)
for c in commits:
    if not c["author"].endswith("[bot]"):
        names[c["email"]][c["author"]] += 1
people = [(n.most_common(1)[0][0], sum(n.values())) for n in names.values()]
people.sort(key=lambda p: (-p[1], p[0]))
total = sum(n for _, n in people)
out = ["# Contributors", "", "## Contributors", "", "| Author | Commits | Share |", "|---|---:|---:|"]
out += [f"| {a} | {n} | {n / total * 100:.1f}% |" for a, n in people]
out += ["", "## Summary", "", f"{total} commits by {len(people)} contributors (bots excluded).", ""]
open("repo/contributors.md", "w").write("\n".join(out))
PY
