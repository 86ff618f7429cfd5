import unittest
from datetime import date

from dates import add_months, is_leap_year


class LeapYearTest(unittest.TestCase):
    def test_ordinary_years(self):
        self.assertTrue(is_leap_year(2024))
        self.assertFalse(is_leap_year(2023))

    def test_centuries(self):
        self.assertFalse(is_leap_year(1900))
        self.assertTrue(is_leap_year(2000))


class AddMonthsTest(unittest.TestCase):
    def test_simple(self):
        self.assertEqual(add_months(date(2026, 1, 15), 1), date(2026, 2, 15))

    def test_clamps_to_month_end(self):
        self.assertEqual(add_months(date(2026, 1, 31), 1), date(2026, 2, 28))

    def test_crosses_year(self):
        self.assertEqual(add_months(date(2026, 11, 30), 3), date(2027, 2, 28))

    def test_zero(self):
        self.assertEqual(add_months(date(2026, 7, 4), 0), date(2026, 7, 4))


if __name__ == "__main__":
    unittest.main()
