"""count_matches: count the lines of a log that contain a word (`grep -c WORD FILE > OUT`).

Wrong answer: `grep -ci` also counts the lines where the word appears in lower case (every instance
has at least one), so the count is off.
"""

from __future__ import annotations

import random

from harnessrl.tasks.generate.base import Family, Instance, answer_body, answer_instance

WORDS = ("ERROR", "WARN", "FAIL", "TIMEOUT", "DENIED")
FILES = ("log.txt", "server.log", "events.txt", "app.log")
OUTS = ("count.txt", "answer.txt", "total.txt")
OTHER_LEVELS = ("INFO", "DEBUG", "OK")
MESSAGES = ("disk check", "user login", "cache refresh", "job started", "job done", "backup", "sync")

BODY = answer_body(
    "input_unchanged",
    "answer_exists",
    """
    s["answer_is_number"] = float(answer.strip().isdigit())
    s["count_correct"] = float(answer.strip() == str(E["count"]))
""",
)
SUMMARY = "the number of lines holding the word, alone in the answer file; the log unchanged."
METRICS = ("answer_exists", "answer_is_number", "count_correct", "input_unchanged")


def make(rng: random.Random) -> Instance:
    word, name, out = rng.choice(WORDS), rng.choice(FILES), rng.choice(OUTS)
    lines = []
    for i in range(rng.randint(6, 12)):
        level = word if rng.random() < 0.4 else rng.choice(OTHER_LEVELS)
        lines.append(f"10:{i:02d} {level} {rng.choice(MESSAGES)}")
    lines.insert(rng.randint(0, len(lines)), f"10:30 {word} {rng.choice(MESSAGES)}")
    lines.insert(rng.randint(0, len(lines)), f"10:31 INFO retry after {word.lower()}")
    text = "\n".join(lines) + "\n"
    count = sum(word in line for line in lines)
    prompt = f"Count the lines of {name} that contain {word} and write the number to {out}."
    solve, wrong = f"grep -c {word} {name} > {out}", f"grep -ci {word} {name} > {out}"
    return answer_instance(prompt, (name, text), out, solve, wrong, count=count)


FAMILY = Family(name="count_matches", metrics=METRICS, check_body=BODY, make=make, summary=SUMMARY)
