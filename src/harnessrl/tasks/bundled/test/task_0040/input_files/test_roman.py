import unittest

from roman import from_roman, to_roman


class RomanTest(unittest.TestCase):
    def test_to_roman(self):
        self.assertEqual(to_roman(3), "III")
        self.assertEqual(to_roman(9), "IX")
        self.assertEqual(to_roman(2026), "MMXXVI")

    def test_from_roman(self):
        self.assertEqual(from_roman("IX"), 9)
        self.assertEqual(from_roman("mcmxcix"), 1999)

    def test_zero_is_invalid(self):
        with self.assertRaises(ValueError):
            to_roman(0)

    def test_round_trip_small(self):
        for n in range(1, 50):
            self.assertEqual(from_roman(to_roman(n)), n)


if __name__ == "__main__":
    unittest.main()
