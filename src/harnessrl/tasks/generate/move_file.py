"""move_file: move (or rename) one file, creating the destination folder (`mkdir -p D && mv A D/B`).

Wrong answer: `cp` instead of `mv`: the destination is right but the source is still there.
"""

from __future__ import annotations

import random

from harnessrl.tasks.generate.base import Family, Instance

SOURCES = ("notes", "docs", "drafts", "inbox")
DESTS = ("archive", "done", "old", "backup")
STEMS = ("draft", "report", "todo", "plan", "summary", "letter")
WORDS = ("alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa")

BODY = """
def _score(ws, s, E):
    s["source_gone"] = float(not (ws / E["source"]).exists())
    s["others_untouched"] = float(all(_read(ws / p) == t for p, t in E["others"].items()))
    dest = ws / E["dest"]
    if not dest.is_file():
        return
    s["dest_exists"] = 1.0
    s["content_identical"] = float(_read(dest) == E["content"])
"""
SUMMARY = "the file at its new path with the same content, gone from the old one; the other file kept."
METRICS = ("dest_exists", "content_identical", "source_gone", "others_untouched")


def make(rng: random.Random) -> Instance:
    folder, stem, keep = rng.choice(SOURCES), *rng.sample(STEMS, 2)
    source, other = f"{folder}/{stem}.txt", f"{folder}/{keep}.txt"
    content = " ".join(rng.sample(WORDS, 3)) + "\n"
    files = {source: content, other: " ".join(rng.sample(WORDS, 2)) + "\n"}
    if rng.random() < 0.3:
        dest = f"{folder}/{stem}_{rng.randint(1, 9)}.txt"
        solve, wrong = f"mv {source} {dest}", f"cp {source} {dest}"
        prompt = f"Rename {source} to {dest}."
    else:
        dest = f"{rng.choice(DESTS)}/{rng.choice(STEMS)}.txt"
        mkdir = f"mkdir -p {dest.split('/')[0]} && "
        solve, wrong = f"{mkdir}mv {source} {dest}", f"{mkdir}cp {source} {dest}"
        prompt = f"Move {source} to {dest}."
    return Instance(
        prompt=prompt,
        files=files,
        expected={"source": source, "dest": dest, "content": content, "others": {other: files[other]}},
        solve=solve,
        wrong=wrong,
    )


FAMILY = Family(name="move_file", metrics=METRICS, check_body=BODY, make=make, summary=SUMMARY)
