"""csv_field: one field of one row of a small CSV (`awk -F, '$1=="NAME" {print $2}' F > OUT`).

Wrong answer: the neighbouring column (`$3` for `$2` and back), the classic off-by-one.
"""

from __future__ import annotations

import random

from harnessrl.tasks.generate.base import ONE_VALUE_CHECKS, Family, Instance, answer_body, answer_instance

FILES = ("people.csv", "members.csv", "staff.csv")
NAMES = ("Ada", "Bram", "Chen", "Dana", "Emil", "Fay", "Gus", "Hana", "Ivo", "Jun", "Kai", "Lena")
CITIES = ("Oslo", "Lima", "Pune", "Kyiv", "Nice", "Cork", "Graz", "Bern", "Riga", "Fez")
FIELDS = {"city": 2, "age": 3}

BODY = answer_body("csv_unchanged", "answer_exists", ONE_VALUE_CHECKS)
SUMMARY = "the asked field of the asked row, alone on one line; the CSV unchanged."
METRICS = ("answer_exists", "single_line", "value_correct", "csv_unchanged")


def make(rng: random.Random) -> Instance:
    name = rng.choice(FILES)
    people = rng.sample(NAMES, rng.randint(4, 7))
    rows = [(p, rng.choice(CITIES), str(rng.randint(19, 70))) for p in people]
    text = "name,city,age\n" + "".join(",".join(r) + "\n" for r in rows)
    who = rng.choice(rows)
    field = rng.choice(sorted(FIELDS))
    col = FIELDS[field]
    out = rng.choice((f"{field}.txt", "answer.txt"))
    prompt = f"Write the {field} of {who[0]} from {name} to {out}."
    solve = f"awk -F, '$1==\"{who[0]}\" {{print ${col}}}' {name} > {out}"
    wrong = f"awk -F, '$1==\"{who[0]}\" {{print ${5 - col}}}' {name} > {out}"
    return answer_instance(prompt, (name, text), out, solve, wrong, value=who[col - 1])


FAMILY = Family(name="csv_field", metrics=METRICS, check_body=BODY, make=make, summary=SUMMARY)
