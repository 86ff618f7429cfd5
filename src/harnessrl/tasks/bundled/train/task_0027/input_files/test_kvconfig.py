import unittest

from kvconfig import parse_bool, parse_config


class ParseConfigTest(unittest.TestCase):
    def test_basic(self):
        self.assertEqual(parse_config("host=db\nport=5432\n"), {"host": "db", "port": "5432"})

    def test_whitespace_and_comments(self):
        text = "# deploy settings\n\nhost = db.internal  \n"
        self.assertEqual(parse_config(text), {"host": "db.internal"})

    def test_value_with_equals(self):
        self.assertEqual(parse_config("dsn = postgres://u@h/db?sslmode=require"),
                         {"dsn": "postgres://u@h/db?sslmode=require"})

    def test_missing_equals(self):
        with self.assertRaises(ValueError):
            parse_config("host = a\noops\n")


class ParseBoolTest(unittest.TestCase):
    def test_mixed_case(self):
        self.assertTrue(parse_bool("Yes"))
        self.assertFalse(parse_bool("FALSE"))

    def test_garbage(self):
        with self.assertRaises(ValueError):
            parse_bool("maybe")


if __name__ == "__main__":
    unittest.main()
