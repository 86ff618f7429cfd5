#!/usr/bin/env bash
set -euo pipefail
cat > roman.py <<'PY'
"""Roman numerals for the clock-face renderer (standard subtractive notation, 1..3999)."""

_TABLE = [(1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"),
          (50, "L"), (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I")]
_VALUE = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}


def to_roman(n: int) -> str:
    """1..3999 -> numeral; ValueError outside that range."""
    if not 1 <= n <= 3999:
        raise ValueError(f"{n} is outside 1..3999")
    out = []
    for value, symbol in _TABLE:
        count, n = divmod(n, value)
        out.append(symbol * count)
    return "".join(out)


def from_roman(text: str) -> int:
    """Numeral -> int; a symbol smaller than the next one is subtracted."""
    values = [_VALUE[c] for c in text.upper()]
    total = 0
    for i, v in enumerate(values):
        total += -v if i + 1 < len(values) and v < values[i + 1] else v
    return total
PY
