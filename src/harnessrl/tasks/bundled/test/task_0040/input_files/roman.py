"""Roman numerals for the clock-face renderer (standard subtractive notation, 1..3999)."""

_TABLE = [(1000, "M"), (500, "D"), (100, "C"), (50, "L"), (10, "X"), (5, "V"), (1, "I")]
_VALUE = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}


def to_roman(n: int) -> str:
    """1..3999 -> numeral; ValueError outside that range."""
    if n < 0:
        raise ValueError(f"{n} is negative")
    out = []
    for value, symbol in _TABLE:
        count, n = divmod(n, value)
        out.append(symbol * count)
    return "".join(out)


def from_roman(text: str) -> int:
    """Numeral -> int; a symbol smaller than the next one is subtracted."""
    return sum(_VALUE[c] for c in text.upper())
