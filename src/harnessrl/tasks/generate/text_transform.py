"""text_transform: upper-case, sort or dedupe the lines of a word list into a new file.

References: `tr a-z A-Z < F > OUT`, `sort F > OUT`, `sort -u F > OUT`. Wrong answers: only the first
letter capitalised (awk), `sort -r`, and `uniq` without sorting (the duplicates are not adjacent).
"""

from __future__ import annotations

import itertools
import random

from harnessrl.tasks.generate.base import Family, Instance, answer_body, answer_instance

FILES = ("words.txt", "names.txt", "items.txt")
WORDS = ("apple", "cedar", "maple", "lemon", "olive", "peach", "plum", "basil", "thyme", "mint", "fig")
CAPITALISE = "awk '{print toupper(substr($0,1,1)) substr($0,2)}'"

BODY = answer_body(
    "input_unchanged",
    "output_exists",
    """
    lines = text.splitlines()
    s["line_count_correct"] = float(len(lines) == len(E["lines"]))
    s["lines_correct"] = float(lines == E["lines"])
""",
    var="text",
)
SUMMARY = "the transformed lines, exactly, in the output file; the input unchanged."
METRICS = ("output_exists", "line_count_correct", "lines_correct", "input_unchanged")


def _words(rng: random.Random, op: str) -> list[str]:
    words = rng.sample(WORDS, rng.randint(4, 7))
    if op == "dedupe":  # two duplicates, never next to their twin and never already sorted
        words = [*words, words[0], words[2]]
        while any(a == b for a, b in itertools.pairwise(words)) or words == sorted(words):
            rng.shuffle(words)
    return words


def make(rng: random.Random) -> Instance:
    op, name = rng.choice(("upper", "sort", "dedupe")), rng.choice(FILES)
    words = _words(rng, op)
    text = "\n".join(words) + "\n"
    if op == "upper":
        out, want = "upper.txt", [w.upper() for w in words]
        prompt = f"Write the lines of {name} in upper case to {out}."
        solve, wrong = f"tr a-z A-Z < {name} > {out}", f"{CAPITALISE} {name} > {out}"
    elif op == "sort":
        out, want = "sorted.txt", sorted(words)
        prompt = f"Write the lines of {name} sorted alphabetically to {out}."
        solve, wrong = f"sort {name} > {out}", f"sort -r {name} > {out}"
    else:
        out, want = "unique.txt", sorted(set(words))
        prompt = f"Write the distinct lines of {name}, sorted alphabetically, to {out}."
        solve, wrong = f"sort -u {name} > {out}", f"uniq {name} > {out}"
    return answer_instance(prompt, (name, text), out, solve, wrong, lines=want)


FAMILY = Family(name="text_transform", metrics=METRICS, check_body=BODY, make=make, summary=SUMMARY)
