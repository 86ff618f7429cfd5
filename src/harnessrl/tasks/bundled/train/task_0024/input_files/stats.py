"""Descriptive statistics for the sensor dashboard (stdlib only, no numpy on the devices)."""


def mean(values: list[float]) -> float:
    """Arithmetic mean. Raises ValueError on an empty list."""
    return sum(values) / len(values)


def median(values: list[float]) -> float:
    """Middle value of the sorted values; the mean of the two middle ones for an even count.

    Raises ValueError on an empty list.
    """
    xs = sorted(values)
    mid = len(xs) // 2
    if len(xs) % 2 == 1:
        return xs[mid]
    return (xs[mid] + xs[mid + 1]) / 2


def variance(values: list[float]) -> float:
    """Population variance (divides by n)."""
    m = mean(values)
    return sum((x - m) ** 2 for x in values) / len(values)
