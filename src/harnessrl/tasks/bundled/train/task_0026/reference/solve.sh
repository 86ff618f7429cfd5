#!/usr/bin/env bash
set -euo pipefail
python3 - <<'PY'
from pathlib import Path
p = Path("shop/cart.py")
src = p.read_text()
src = src.replace("        del self._lines[sku]\n",
                  "        price, qty = self._lines[sku]\n"
                  "        if qty > units:\n"
                  "            self._lines[sku] = (price, qty - units)\n"
                  "        else:\n"
                  "            del self._lines[sku]\n")
src = src.replace("        return subtotal * (100 - discount_percent) // 100\n",
                  "        return (subtotal * (100 - discount_percent) + 50) // 100\n")
p.write_text(src)
PY
