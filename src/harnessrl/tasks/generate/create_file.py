"""create_file: a new file in a new folder holding one given line (`mkdir -p D && echo 'L' > D/F`).

Wrong answer: the file written in the workspace root, not in the folder the prompt names.
"""

from __future__ import annotations

import random

from harnessrl.tasks.generate.base import Family, Instance

FOLDERS = ("out", "notes", "build", "docs")
NAMES = ("hello.txt", "status.txt", "motd.txt", "label.txt")
WORDS = ("blue", "harbor", "quiet", "river", "stone", "amber", "north", "lantern")

BODY = """
def _score(ws, s, E):
    text = _read(ws / E["path"])
    if text is None:
        return
    s["file_exists"] = 1.0
    s["content_exact"] = float(text.strip() == E["line"])
    s["single_line"] = float(text.strip() != "" and text.rstrip("\\n").count("\\n") == 0)
"""
SUMMARY = "the file at the given path holding exactly the given line."
METRICS = ("file_exists", "content_exact", "single_line")


def make(rng: random.Random) -> Instance:
    folder, name = rng.choice(FOLDERS), rng.choice(NAMES)
    line = f"{' '.join(rng.sample(WORDS, 2))} {rng.randint(1, 99)}"
    path = f"{folder}/{name}"
    return Instance(
        prompt=f"Create the file {path} containing exactly this line: {line}",
        files={"README.md": "# scratch space\n"},
        expected={"path": path, "line": line},
        solve=f"mkdir -p {folder} && echo '{line}' > {path}",
        wrong=f"echo '{line}' > {name}",
    )


FAMILY = Family(name="create_file", metrics=METRICS, check_body=BODY, make=make, summary=SUMMARY)
