#!/usr/bin/env bash
set -euo pipefail
python3 - <<'PY'
from pathlib import Path
p = Path("meeting_notes.md")
keep, items = [], []
for line in p.read_text().splitlines():
    if line.startswith("ACTION:"):
        owner, task = line[len("ACTION:"):].split(" - ", 1)
        items.append(f"- [ ] {owner.strip()}: {task.strip()}")
    else:
        keep.append(line)
text = "\n".join(keep).rstrip("\n") + "\n\n## Action items\n\n" + "\n".join(items) + "\n"
p.write_text(text)
PY
