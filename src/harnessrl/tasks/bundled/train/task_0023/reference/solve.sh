#!/usr/bin/env bash
set -euo pipefail
python3 - <<'PY'
from pathlib import Path
p = Path("textutils.py")
src = p.read_text()
src = src.replace('    text = re.sub(r"[^a-z0-9]", "-", text)\n    return text\n',
                  '    text = re.sub(r"[^a-z0-9]+", "-", text)\n    return text.strip("-")\n')
src = src.replace("if len(words) < limit:", "if len(words) <= limit:")
p.write_text(src)
PY
