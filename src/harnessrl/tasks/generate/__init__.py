"""Procedural task families: seeded, small, many, in the ClawGym folder layout.

A 135M model given a one-line task first has to learn the harness's action format (SFT on
demonstrations) before RL has any variance to work with, and seven warmup tasks neither show learning
nor leave anything to hold out. These families give as many instances as asked for, each a one- or
two-sentence prompt whose answer is one or two shell commands, with a checker (stdlib only, 3-4
binary metrics, deterministic), a reference (`reference/solve.sh`, one command line) and a plausible
wrong answer (`reference/wrong.sh`) that loses at least one metric. `harnessrl tasks check` and
`verify.selfcheck` check all three: untouched < 1.0, reference == 1.0, wrong < 1.0.

    harnessrl tasks generate --family all --n 50 --seed 0 OUT                  # OUT/train/
    harnessrl tasks generate --family all --n 10 --seed 0 --split heldout OUT  # OUT/heldout_instances/
    harnessrl tasks generate --family json_field --n 10 --seed 0 OUT           # OUT/heldout_family/

Families (`TASK_FAMILIES`, one module each): count_matches, csv_field, move_file, text_transform,
code_fix, create_file (train) and json_field (held out: never in `--family all`). The multi-step
families log_triage and config_update (`MULTI_STEP_FAMILIES`: a three-sentence prompt, three
commands whose order matters, one per step: `clawgym_folder.STEPS_MARK`) are train families named
only (never in `--family all`, so the default sets stay what they were): `--family log_triage`,
`transfer.families`.

The split, so that nothing evaluated was trained on:
- an instance is drawn from `random.Random(f"{family}/{seed}/{j}")` for candidates j = 0, 1, ...;
- a candidate of a train family is a *held-out instance* when sha256(`family` + prompt) is 0 mod
  `HELD_OUT_EVERY` (5): held-out prompts never occur in `train`, whatever the seeds;
- `--split train` keeps the other candidates, `--split heldout` these, in order, until `n` are kept;
- every candidate of a held-out family is kept, into `heldout_family/`.
Task ids say all of it: `task_<family>_<split>_s<seed>_<index>`; loading OUT gives three splits.
Everything is a pure function of (family, split, seed, index): same arguments, byte-identical folders.
"""

from __future__ import annotations

import hashlib
import random
from pathlib import Path

from harnessrl.tasks.generate import (
    code_fix,
    config_update,
    count_matches,
    create_file,
    csv_field,
    json_field,
    log_triage,
    move_file,
    text_transform,
)
from harnessrl.tasks.generate.base import Family, Instance, write_instance

TASK_FAMILIES: dict[str, Family] = {
    "count_matches": count_matches.FAMILY,
    "csv_field": csv_field.FAMILY,
    "move_file": move_file.FAMILY,
    "text_transform": text_transform.FAMILY,
    "code_fix": code_fix.FAMILY,
    "create_file": create_file.FAMILY,
    "json_field": json_field.FAMILY,
    "log_triage": log_triage.FAMILY,
    "config_update": config_update.FAMILY,
}
HELD_OUT_FAMILIES = ("json_field",)
MULTI_STEP_FAMILIES = ("log_triage", "config_update")
TRAIN_FAMILIES = tuple(n for n in TASK_FAMILIES if n not in (*HELD_OUT_FAMILIES, *MULTI_STEP_FAMILIES))
"""The default train set (`--family all`): the one-command families."""
NAMED_TRAIN_FAMILIES = (*TRAIN_FAMILIES, *MULTI_STEP_FAMILIES)
"""Every family a train split can be drawn from, by name."""
HELD_OUT_EVERY = 5
SPLITS = ("train", "heldout")
MAX_CANDIDATES_PER_TASK = 200


def candidate(family: str, seed: int, j: int) -> Instance:
    """Candidate j of a family's stream for `seed`."""
    return TASK_FAMILIES[family].make(random.Random(f"{family}/{seed}/{j}"))


def is_held_out_instance(family: str, inst: Instance) -> bool:
    """The held-out bucket of a train family, decided by the prompt alone (see the module docstring)."""
    digest = hashlib.sha256(f"{family}\n{inst.prompt}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % HELD_OUT_EVERY == 0


def split_dir(family: str, split: str) -> str:
    """The split folder an instance is written to: train | heldout_instances | heldout_family."""
    if family in HELD_OUT_FAMILIES:
        return "heldout_family"
    return "train" if split == "train" else "heldout_instances"


def instances(family: str, split: str, seed: int, n: int) -> list[Instance]:
    """The first `n` candidates of `family` that belong to `split`."""
    if family not in TASK_FAMILIES:
        raise ValueError(f"unknown family {family!r} (known: {', '.join(TASK_FAMILIES)})")
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r} (expected one of {SPLITS})")
    want_held_out = split == "heldout"
    kept: list[Instance] = []
    for j in range(MAX_CANDIDATES_PER_TASK * max(n, 1)):
        if len(kept) == n:
            break
        inst = candidate(family, seed, j)
        if family in HELD_OUT_FAMILIES or is_held_out_instance(family, inst) == want_held_out:
            kept.append(inst)
    if len(kept) < n:
        raise ValueError(f"{family}: only {len(kept)} {split} instances in the first {j + 1} candidates")
    return kept


def task_id(family: str, split: str, seed: int, index: int) -> str:
    return f"task_{family}_{split_dir(family, split).split('_')[0]}_s{seed}_{index:04d}"


def generate(families: list[str], n: int, seed: int, out: Path, split: str = "train") -> list[Path]:
    """Write `n` instances of each family under `out/<split folder>/`; return the task folders.

    Raises ValueError for an unknown family or split, FileExistsError when a task folder exists.
    """
    folders: list[Path] = []
    for family in families:
        dest = out / split_dir(family, split)
        for index, inst in enumerate(instances(family, split, seed, n)):
            tid = task_id(family, split, seed, index)
            if (dest / tid).exists():
                raise FileExistsError(f"{dest / tid} already exists")
            generator = {"family": family, "split": split_dir(family, split), "seed": seed, "index": index}
            folders.append(write_instance(TASK_FAMILIES[family], inst, tid, dest, generator))
    return folders


__all__ = [
    "HELD_OUT_FAMILIES",
    "MULTI_STEP_FAMILIES",
    "NAMED_TRAIN_FAMILIES",
    "TASK_FAMILIES",
    "TRAIN_FAMILIES",
    "Family",
    "Instance",
    "candidate",
    "generate",
    "instances",
    "is_held_out_instance",
    "split_dir",
    "task_id",
]
