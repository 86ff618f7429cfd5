#!/usr/bin/env bash
set -euo pipefail
python3 - <<'PY'
from pathlib import Path
p = Path("tools/csvsum.py")
src = p.read_text()
src = src.replace("        idx = header.index(column)\n",
                  "        if column not in header:\n            raise KeyError(column)\n"
                  "        idx = header.index(column)\n")
src = src.replace("            total += float(row[idx])\n",
                  "            if idx < len(row) and row[idx].strip():\n"
                  "                total += float(row[idx])\n")
src = src.replace("    total = column_total(path, column)\n    print(total)\n",
                  "    try:\n        total = column_total(path, column)\n    except KeyError:\n"
                  "        print(f\"unknown column: {column}\", file=sys.stderr)\n        return 1\n"
                  "    print(f\"{total:.2f}\")\n")
p.write_text(src)
PY
