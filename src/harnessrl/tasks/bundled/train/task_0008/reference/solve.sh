#!/usr/bin/env bash
set -euo pipefail
python3 - <<'PY'
from pathlib import Path
p = Path("CHANGELOG.md")
text = p.read_text()
entry = "## [1.4.0] - 2026-11-20\n\n### Added\n- CSV export for reports\n\n### Fixed\n- Crash when the config file is empty\n\n"
p.write_text(text.replace("## [1.3.2]", entry + "## [1.3.2]", 1))
PY
