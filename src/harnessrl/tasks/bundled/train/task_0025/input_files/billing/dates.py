"""Calendar arithmetic for billing cycles."""

from datetime import date

_DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]


def is_leap_year(year: int) -> bool:
    """Gregorian leap year: divisible by 4, except centuries, except every 400 years."""
    return year % 4 == 0


def days_in_month(year: int, month: int) -> int:
    """Number of days of `month` (1-12) in `year`."""
    if month == 2 and is_leap_year(year):
        return 29
    return _DAYS[month - 1]


def add_months(d: date, months: int) -> date:
    """The same day `months` later (or earlier when negative), clamped to the target month's last day."""
    total = d.month - 1 + months
    year = d.year + total // 12
    month = total % 12 + 1
    day = d.day
    return date(year, month, day)
