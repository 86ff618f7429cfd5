"""task_0037 (file_edit): contacts.csv header e-mail -> email, email values lowercased, other cells and row
order unchanged.
"""

import csv
import io
import json
import sys
from pathlib import Path

KEYS = (
    "csv_parses",
    "header_renamed",
    "emails_lowercased",
    "names_case_kept",
    "row_order_kept",
    "other_columns_unchanged",
)


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


ROWS = [
    ["Ana Souza", "Ana.Souza@Example.COM", "Lisbon", "+351 21 000 111"],
    ["Bram de Vries", "bram@DEVRIES.nl", "Utrecht", "+31 30 222 333"],
    ["Chen Wei", "Chen.Wei@Mail.cn", "Chengdu", "+86 28 444 555"],
    ["Dora McKay", "dora.mckay@example.org", "Glasgow", "+44 141 666 777"],
    ["Émile Roux", "Emile.ROUX@Poste.fr", "Lyon", "+33 4 888 999"],
]


def _score(ws: Path, s: dict) -> None:
    rows = list(csv.reader(io.StringIO(_text(ws / "contacts.csv"))))
    if not rows:
        return
    s["csv_parses"] = 1.0
    s["header_renamed"] = float(rows[0] == ["name", "email", "city", "phone"])
    body = rows[1:]
    if len(body) != len(ROWS) or any(len(r) != 4 for r in body):
        return
    s["emails_lowercased"] = float([r[1] for r in body] == [x[1].lower() for x in ROWS])
    s["names_case_kept"] = float(sorted(r[0] for r in body) == sorted(x[0] for x in ROWS))
    s["row_order_kept"] = float([r[0] for r in body] == [x[0] for x in ROWS])
    s["other_columns_unchanged"] = float([r[2:] for r in body] == [x[2:] for x in ROWS])


def grade(transcript: list, workspace_path: str) -> dict:
    """Each value is 0.0 or 1.0; the task score is their mean. Never raises."""
    scores = {key: 0.0 for key in KEYS}
    try:
        _score(Path(workspace_path), scores)
    except BaseException:  # garbage in the workspace must cost metrics, not crash the checker
        pass
    return scores


def main() -> None:
    workspace_path = sys.argv[1] if len(sys.argv) > 1 else "."
    print(json.dumps(grade([], workspace_path), indent=2))


if __name__ == "__main__":
    main()
