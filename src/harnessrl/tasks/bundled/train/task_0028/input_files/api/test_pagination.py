import unittest

from pagination import page_count, paginate

ITEMS = list(range(10))


class PaginateTest(unittest.TestCase):
    def test_first_page(self):
        self.assertEqual(paginate(ITEMS, 1, 3), [0, 1, 2])

    def test_last_partial_page(self):
        self.assertEqual(paginate(ITEMS, 4, 3), [9])

    def test_past_the_end(self):
        self.assertEqual(paginate(ITEMS, 5, 3), [])

    def test_page_zero(self):
        with self.assertRaises(ValueError):
            paginate(ITEMS, 0, 3)


class PageCountTest(unittest.TestCase):
    def test_counts(self):
        self.assertEqual(page_count(10, 3), 4)
        self.assertEqual(page_count(9, 3), 3)


if __name__ == "__main__":
    unittest.main()
