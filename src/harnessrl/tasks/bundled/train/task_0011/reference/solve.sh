#!/usr/bin/env bash
set -euo pipefail
python3 - <<'PY'
import re
from pathlib import Path
p = Path("docs/guide.md")
text = p.read_text()
top, body = text.split("## Contents\n", 1)
body = body[body.index("\n## ") + 1:]
heads = [l[3:].strip() for l in body.splitlines() if l.startswith("## ")]
def anchor(h):
    return re.sub(r"[^a-z0-9 -]", "", h.lower()).replace(" ", "-")
toc = "".join(f"- [{h}](#{anchor(h)})\n" for h in heads)
p.write_text(top + "## Contents\n\n" + toc + "\n" + body)
PY
