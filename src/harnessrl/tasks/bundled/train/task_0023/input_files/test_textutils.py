import unittest

from textutils import slugify, truncate_words


class SlugifyTest(unittest.TestCase):
    def test_punctuation_becomes_single_hyphen(self):
        self.assertEqual(slugify("Hello, World!"), "hello-world")

    def test_accents_and_padding(self):
        self.assertEqual(slugify("  Crème brûlée -- recipes "), "creme-brulee-recipes")

    def test_plain_word(self):
        self.assertEqual(slugify("Python"), "python")


class TruncateTest(unittest.TestCase):
    def test_exactly_limit_is_untouched(self):
        self.assertEqual(truncate_words("one two three", 3), "one two three")

    def test_cut_adds_ellipsis(self):
        self.assertEqual(truncate_words("one two three four", 2), "one two...")


if __name__ == "__main__":
    unittest.main()
