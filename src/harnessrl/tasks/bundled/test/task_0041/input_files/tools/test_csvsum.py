import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

SCRIPT = Path(__file__).with_name("csvsum.py")


def run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=30)


class CsvSumTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.path = Path(self.tmp.name) / "orders.csv"
        self.path.write_text("order,amount,note\nA1,10.5,\nA2,,late\nA3,2,\"gift, wrapped\"\n")

    def tearDown(self):
        self.tmp.cleanup()

    def test_sum_skips_empty_cells(self):
        done = run(str(self.path), "amount")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(done.stdout.strip(), "12.50")

    def test_unknown_column(self):
        done = run(str(self.path), "price")
        self.assertEqual(done.returncode, 1)
        self.assertIn("unknown column: price", done.stderr)
        self.assertNotIn("Traceback", done.stderr)

    def test_usage(self):
        self.assertEqual(run(str(self.path)).returncode, 2)

    def test_integer_total_has_two_decimals(self):
        path = Path(self.tmp.name) / "n.csv"
        path.write_text("n\n1\n2\n")
        self.assertEqual(run(str(path), "n").stdout.strip(), "3.00")


if __name__ == "__main__":
    unittest.main()
