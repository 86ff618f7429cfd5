"""A shopping cart that works in integer cents (no float money anywhere)."""


class Cart:
    def __init__(self) -> None:
        self._lines: dict[str, tuple[int, int]] = {}  # sku -> (unit price in cents, quantity)

    def add(self, sku: str, price_cents: int, qty: int = 1) -> None:
        """Add `qty` units; a second add of the same sku increases its quantity."""
        old = self._lines.get(sku, (price_cents, 0))[1]
        self._lines[sku] = (price_cents, old + qty)

    def remove(self, sku: str, units: int = 1) -> None:
        """Take `units` units out; the line disappears when none are left. KeyError if absent."""
        if sku not in self._lines:
            raise KeyError(sku)
        del self._lines[sku]

    def lines(self) -> list[tuple[str, int, int]]:
        """(sku, unit price in cents, quantity) for every line."""
        return [(sku, price, qty) for sku, (price, qty) in self._lines.items()]

    def item_count(self) -> int:
        """Total number of units in the cart."""
        return sum(qty for _, qty in self._lines.values())

    def total(self, discount_percent: int = 0) -> int:
        """Total in cents after a percentage discount, rounded to the nearest cent (half up)."""
        subtotal = sum(price * qty for price, qty in self._lines.values())
        return subtotal * (100 - discount_percent) // 100
