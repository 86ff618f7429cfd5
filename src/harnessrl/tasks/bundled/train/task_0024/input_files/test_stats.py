import unittest

import stats


class MeanTest(unittest.TestCase):
    def test_mean(self):
        self.assertEqual(stats.mean([1, 2, 3, 4]), 2.5)

    def test_mean_empty(self):
        with self.assertRaises(ValueError):
            stats.mean([])


class MedianTest(unittest.TestCase):
    def test_odd(self):
        self.assertEqual(stats.median([3, 1, 2]), 2)

    def test_even(self):
        self.assertEqual(stats.median([4, 1, 3, 2]), 2.5)

    def test_empty(self):
        with self.assertRaises(ValueError):
            stats.median([])


class VarianceTest(unittest.TestCase):
    def test_variance(self):
        self.assertEqual(stats.variance([1, 1, 1]), 0)


if __name__ == "__main__":
    unittest.main()
