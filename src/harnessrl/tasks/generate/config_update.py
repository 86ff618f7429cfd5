"""config_update (multi-step): back a config file up, change one key in it, log the change.

Three reference commands, one per step (`reference/solve.sh` marked `STEPS_MARK`), in an order that
matters (the backup must hold the old value):

    mkdir -p backup && cp conf/A.cfg backup/
    sed -i 's/^KEY=.*/KEY=NEW/' conf/A.cfg
    echo 'KEY=NEW' >> changes.txt

Wrong sequence: the edit first, then the backup, which then holds the new value.
"""

from __future__ import annotations

import random

from harnessrl.tasks.generate.base import Family, Instance, steps_instance

APPS = ("server", "client", "proxy", "cache", "mailer", "gateway", "indexer", "scheduler")
VALUES = {
    "port": ("8080", "9090", "7000", "5000"),
    "workers": ("2", "4", "8", "16"),
    "timeout": ("30", "60", "90", "120"),
    "retries": ("1", "3", "5", "7"),
    "level": ("debug", "info", "warn", "error"),
    "mode": ("fast", "safe", "lazy", "strict"),
}
KEYS = tuple(VALUES)

BODY = """
def _score(ws, s, E):
    s["backup_original"] = float(_read(ws / "backup" / E["name"]) == E["original"])
    s["key_updated"] = float(_read(ws / E["path"]) == E["updated"])
    s["change_logged"] = float(_read(ws / "changes.txt") == E["change"] + "\\n")
"""
SUMMARY = "the original config in backup/, the key changed in place, the change logged."
METRICS = ("backup_original", "key_updated", "change_logged")


def make(rng: random.Random) -> Instance:
    app = rng.choice(APPS)
    keys = rng.sample(KEYS, 3)
    values = {k: rng.choice(VALUES[k]) for k in keys}
    key = keys[rng.randrange(3)]
    new = rng.choice([v for v in VALUES[key] if v != values[key]])
    name, path = f"{app}.cfg", f"conf/{app}.cfg"
    original = "".join(f"{k}={values[k]}\n" for k in keys)
    updated = original.replace(f"{key}={values[key]}\n", f"{key}={new}\n")
    steps = (
        f"mkdir -p backup && cp {path} backup/",
        f"sed -i 's/^{key}=.*/{key}={new}/' {path}",
        f"echo '{key}={new}' >> changes.txt",
    )
    prompt = (
        f"Three steps: 1. Copy {path} into a new folder backup. 2. In {path}, set {key} to {new}. "
        f"3. Append the line {key}={new} to changes.txt."
    )
    expected = {"name": name, "path": path, "original": original, "updated": updated}
    expected["change"] = f"{key}={new}"
    return steps_instance(prompt, {path: original}, expected, steps, (steps[1], steps[0], steps[2]))


FAMILY = Family(name="config_update", metrics=METRICS, check_body=BODY, make=make, summary=SUMMARY)
