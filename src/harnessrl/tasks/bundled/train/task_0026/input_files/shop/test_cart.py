import unittest

from cart import Cart


class CartTest(unittest.TestCase):
    def setUp(self):
        self.cart = Cart()
        self.cart.add("mug", 899, 2)
        self.cart.add("tea", 450)

    def test_count(self):
        self.assertEqual(self.cart.item_count(), 3)

    def test_remove_one_unit(self):
        self.cart.remove("mug")
        self.assertEqual(self.cart.item_count(), 2)
        self.assertIn(("mug", 899, 1), self.cart.lines())

    def test_total(self):
        self.assertEqual(self.cart.total(), 2248)

    def test_discount_rounds_to_nearest_cent(self):
        self.assertEqual(self.cart.total(15), 1911)

    def test_remove_unknown(self):
        with self.assertRaises(KeyError):
            self.cart.remove("cake")


if __name__ == "__main__":
    unittest.main()
