"""A held-out evaluation set large enough to see an effect: distinct instances nobody trained on.

    python -m harnessrl.evaluate.heldout runs/heldout-s24 --seed 24 --per-family 10
    # -> runs/heldout-s24/heldout_instances/ (10 per train family: 60) and heldout_family/ (json_field: 10)

`harnessrl tasks generate --split heldout` keeps the first n held-out candidates of a seed's stream,
and the small families repeat themselves: of seed 24's first 10 held-out `code_fix` instances only
6 differ (the family has 16 held-out instances in all), and 2 of them are tasks of the quickstart's
own evaluation set (seed 0). Repeats count one task several times (a bootstrap over tasks then
overstates what was measured) and a task already evaluated during development may have been tuned
on. So this walks the same streams (`tasks.generate.candidate(family, seed, j)`, j = 0, 1, ...) and
keeps a candidate only when:

- it is a held-out instance (`is_held_out_instance`: its prompt never occurs in any train split), or
  of a held-out family (json_field: never trained on at all);
- it differs from every instance kept before (prompt, workspace files and expected answer);
- it is none of the instances of `EXCLUDED`: the quickstart's and the scaling ablation's task sets
  (train and held-out instances, `task_seed` 0, 8 and 3 per family);

until `per_family` are kept per family (a ValueError if a family has fewer). The seed must not be
one the project trains with (`EXCLUDED` seeds are refused). Ids are `task_<family>_heldout_s<seed>_
<index>` (as `tasks generate` names them); each task's `data_entry.json` records the candidate index
it came from. Everything is a pure function of (seed, per_family): same arguments, same folders.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from collections.abc import Sequence
from pathlib import Path

from harnessrl.tasks.generate import (
    HELD_OUT_FAMILIES,
    MAX_CANDIDATES_PER_TASK,
    NAMED_TRAIN_FAMILIES,
    TASK_FAMILIES,
    TRAIN_FAMILIES,
    Instance,
    candidate,
    instances,
    is_held_out_instance,
    split_dir,
    task_id,
)
from harnessrl.tasks.generate.base import write_instance

EXCLUDED: tuple[tuple[int, int, int], ...] = ((0, 8, 3),)
"""(task_seed, train per family, held-out per family) of task sets already trained or evaluated on:
the quickstart's (`configs/quickstart.toml`) and the ablation's (seed 0, 8 train, 1 held out: a subset)."""


def identity(inst: Instance) -> str:
    """What makes two instances the same task: prompt, workspace and expected answer."""
    blob = json.dumps([inst.prompt, inst.files, inst.expected], sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def excluded(family: str, sets: Sequence[tuple[int, int, int]] = EXCLUDED) -> set[str]:
    """Identities of the instances of `family` in the excluded task sets."""
    out: set[str] = set()
    for seed, train, held in sets:
        if family in HELD_OUT_FAMILIES:
            out |= {identity(i) for i in instances(family, "train", seed, max(train, held))}
            continue
        out |= {identity(i) for i in instances(family, "train", seed, train)}
        out |= {identity(i) for i in instances(family, "heldout", seed, held)}
    return out


def pick(family: str, seed: int, n: int) -> list[tuple[int, Instance]]:
    """(candidate index, instance) of the first `n` fresh held-out instances (module docstring)."""
    seen = excluded(family)
    kept: list[tuple[int, Instance]] = []
    for j in range(MAX_CANDIDATES_PER_TASK * max(n, 1)):
        inst = candidate(family, seed, j)
        held = family in HELD_OUT_FAMILIES or is_held_out_instance(family, inst)
        key = identity(inst)
        if held and key not in seen:
            seen.add(key)
            kept.append((j, inst))
            if len(kept) == n:
                return kept
    raise ValueError(f"{family}: only {len(kept)} fresh held-out instances for seed {seed} (asked {n})")


def heldout_set(
    out: str | Path,
    seed: int,
    per_family: int = 10,
    held_out_family: int | None = None,
    families: Sequence[str] = TRAIN_FAMILIES,
) -> list[Path]:
    """Write `per_family` fresh held-out instances of each of `families` (train families) and
    `held_out_family` (default `per_family`; 0 = none) of every held-out family under `out`; their
    folders."""
    if seed in {s for s, _, _ in EXCLUDED}:
        raise ValueError(f"seed {seed} made task sets the project trains on; choose another")
    root = Path(out)
    folders: list[Path] = []
    unknown = sorted(set(families) - set(NAMED_TRAIN_FAMILIES))
    if unknown:
        raise ValueError(f"not train families: {unknown} (train families: {list(NAMED_TRAIN_FAMILIES)})")
    counts = {f: per_family for f in families}
    counts |= {f: per_family if held_out_family is None else held_out_family for f in HELD_OUT_FAMILIES}
    for family, n in counts.items():
        dest = root / split_dir(family, "heldout")
        for index, (j, inst) in enumerate(pick(family, seed, n) if n else []):
            tid = task_id(family, "heldout", seed, index)
            if (dest / tid).exists():
                raise FileExistsError(f"{dest / tid} already exists")
            generator = {"family": family, "split": split_dir(family, "heldout"), "seed": seed,
                         "index": index, "candidate": j, "fresh": True}  # fmt: skip
            folders.append(write_instance(TASK_FAMILIES[family], inst, tid, dest, generator))
    return folders


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="folder to write (heldout_instances/, heldout_family/)")
    parser.add_argument("--seed", type=int, required=True, help="a seed never used to make a train set")
    parser.add_argument("--per-family", type=int, default=10, help="instances per family (default 10)")
    args = parser.parse_args(argv)
    folders = heldout_set(args.out, args.seed, args.per_family)
    for split in ("heldout_instances", "heldout_family"):
        n = sum(1 for f in folders if f.parent.name == split)
        print(f"{n} task(s) in {args.out / split}")


if __name__ == "__main__":
    main()
