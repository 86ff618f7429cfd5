"""log_triage (multi-step): make a folder, count a log's lines of one level into it, move the log in.

Three reference commands, one per step (`reference/solve.sh` marked `STEPS_MARK`), in an order that
matters (the count reads the log before it moves):

    mkdir -p D
    grep -c LEVEL logs/S.log > D/count.txt
    mv logs/S.log D/

Wrong sequence: the second step writes the matching lines (`grep LEVEL`), not their number.
"""

from __future__ import annotations

import random

from harnessrl.tasks.generate.base import Family, Instance, steps_instance

LEVELS = ("ERROR", "WARN", "FAIL", "DENIED")
SERVICES = ("api", "web", "worker", "db", "auth", "cron", "mail", "queue", "search", "billing")
FOLDERS = ("triage", "review", "incident", "report", "audit", "oncall")
MESSAGES = ("disk check", "user login", "cache refresh", "job started", "job done", "backup", "sync")

BODY = """
def _score(ws, s, E):
    folder = ws / E["folder"]
    s["folder_exists"] = float(folder.is_dir())
    s["source_gone"] = float(not (ws / E["source"]).exists())
    count = _read(folder / "count.txt")
    s["count_correct"] = float(count is not None and count.strip() == str(E["count"]))
    s["log_moved"] = float(_read(folder / E["name"]) == E["content"])
"""
SUMMARY = "the folder made, the level's line count in its count.txt, the log moved into it."
METRICS = ("folder_exists", "count_correct", "log_moved", "source_gone")


def make(rng: random.Random) -> Instance:
    level, service, folder = rng.choice(LEVELS), rng.choice(SERVICES), rng.choice(FOLDERS)
    others = [lv for lv in ("INFO", "DEBUG", *LEVELS) if lv != level]
    lines = [f"10:00 {level} {rng.choice(MESSAGES)}"]
    for i in range(1, rng.randint(6, 11)):
        this = level if rng.random() < 0.35 else rng.choice(others)
        lines.append(f"10:{i:02d} {this} {rng.choice(MESSAGES)}")
    rng.shuffle(lines)
    text = "\n".join(lines) + "\n"
    name, source = f"{service}.log", f"logs/{service}.log"
    steps = (f"mkdir -p {folder}", f"grep -c {level} {source} > {folder}/count.txt", f"mv {source} {folder}/")
    wrong = (steps[0], f"grep {level} {source} > {folder}/count.txt", steps[2])
    prompt = (
        f"Three steps: 1. Create the folder {folder}. 2. Write the number of lines of {source} that "
        f"contain {level} to {folder}/count.txt. 3. Move {source} into {folder}."
    )
    expected: dict[str, object] = {"folder": folder, "source": source, "name": name, "content": text}
    expected["count"] = sum(level in line for line in lines)
    files = {source: text, "logs/README": "service logs\n"}
    return steps_instance(prompt, files, expected, steps, wrong)


FAMILY = Family(name="log_triage", metrics=METRICS, check_body=BODY, make=make, summary=SUMMARY)
