"""json_field (the held-out family): one top-level value of a JSON config, written to a file.

Reference: `python3 -c "import json; print(json.load(open('F'))['KEY'])" > OUT`. Wrong answer: the
line `grep` finds (`"port": 8080,`), not the value. Held out because it recombines what the train
families teach (extract a field, write a file) on a format none of them uses.
"""

from __future__ import annotations

import json
import random

from harnessrl.tasks.generate.base import ONE_VALUE_CHECKS, Family, Instance, answer_body, answer_instance

FILES = ("config.json", "settings.json", "app.json")
HOSTS = ("alpha.local", "db.internal", "edge-1", "cache-2", "api.test")
REGIONS = ("eu-west", "us-east", "ap-south", "sa-east")

BODY = answer_body("json_unchanged", "answer_exists", ONE_VALUE_CHECKS)
SUMMARY = "the asked top-level value, alone on one line; the JSON file unchanged."
METRICS = ("answer_exists", "single_line", "value_correct", "json_unchanged")


def _config(rng: random.Random) -> dict[str, object]:
    return {
        "name": rng.choice(("shop", "blog", "wiki", "queue")),
        "host": rng.choice(HOSTS),
        "port": rng.randint(1025, 9999),
        "region": rng.choice(REGIONS),
        "timeout": rng.randint(5, 120),
        "debug": rng.random() < 0.5,
    }


def make(rng: random.Random) -> Instance:
    name = rng.choice(FILES)
    config = _config(rng)
    text = json.dumps(config, indent=2) + "\n"
    key = rng.choice(("host", "port", "region", "timeout"))
    out = rng.choice((f"{key}.txt", "value.txt"))
    prompt = f"Write the value of {key} in {name} to {out}."
    solve = f"python3 -c \"import json; print(json.load(open('{name}'))['{key}'])\" > {out}"
    wrong = f"grep '\"{key}\"' {name} > {out}"
    return answer_instance(prompt, (name, text), out, solve, wrong, value=str(config[key]))


FAMILY = Family(name="json_field", metrics=METRICS, check_body=BODY, make=make, summary=SUMMARY)
