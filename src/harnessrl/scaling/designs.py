"""Designs of experiments over the factor space: the strength-2 orthogonal array and the baselines.

OA(18, 3^5, 2): 18 runs of five 3-level factors in which every pair of factors shows each of the 9
level pairs exactly twice. Built from a difference matrix D(6, 5, 3) over Z3 (a zero column and four
columns found by a deterministic depth-first search over the 90 balanced 6-vectors), developed over
the group: run (x, r) = (x, D[r][1] + x, ..., D[r][4] + x) mod 3. Column pairs are balanced because
each column of D holds every symbol twice and each difference of two columns does too. The result is
checked by `is_strength2` before it is returned; the search takes milliseconds.

Designs (`design_codes`): `single` (one configuration), `first-order` (00000, 11111, 22222: each level
of each factor once), `random-18` (seeded), `oa-18`, `all-243`. The 225 codes outside the array are
the in-space held-out set; `eval_codes(seed)` draws the standard 18 of them.
"""

from __future__ import annotations

import random
from collections import Counter
from functools import lru_cache
from itertools import combinations, permutations

from harnessrl.scaling.space import NUM_FACTORS, NUM_LEVELS, all_codes, check_code

RUNS = 18
LAMBDA = RUNS // NUM_LEVELS**2  # each level pair appears twice
DESIGNS = ("single", "first-order", "random-18", "oa-18", "all-243")


def is_strength2(rows: list[str], lam: int = LAMBDA) -> bool:
    """Every pair of factors shows each of the 9 level pairs exactly `lam` times."""
    return all(pair_counts(rows, i, j) == {(a, b): lam for a in "012" for b in "012"}
               for i, j in combinations(range(NUM_FACTORS), 2))  # fmt: skip


def pair_counts(rows: list[str], i: int, j: int) -> dict[tuple[str, str], int]:
    return dict(Counter((r[i], r[j]) for r in rows))


@lru_cache(maxsize=1)
def orthogonal_array() -> tuple[str, ...]:
    """The 18 runs of OA(18, 3^5, 2), as codes, in construction order (x-major)."""
    d = difference_matrix()
    rows = [
        "".join(str((v + x) % NUM_LEVELS) for v in (0, *d_row))
        for x in range(NUM_LEVELS)
        for d_row in zip(*d, strict=True)
    ]
    if not is_strength2(rows) or len(set(rows)) != RUNS:
        raise RuntimeError("constructed array is not strength 2")  # the checker guards the construction
    return tuple(rows)


def difference_matrix() -> list[tuple[int, ...]]:
    """Four columns of length 6 over Z3 such that every column holds each symbol twice and the
    difference of any two columns holds each symbol twice: with the zero column, a difference
    matrix D(6, 5, 3). The first such set in lexicographic order, found depth first."""
    n = RUNS // NUM_LEVELS
    cands = sorted({p for p in permutations((0, 0, 1, 1, 2, 2))})

    def balanced(a: tuple[int, ...], b: tuple[int, ...]) -> bool:
        return Counter((x - y) % NUM_LEVELS for x, y in zip(a, b, strict=True)) == {0: 2, 1: 2, 2: 2}

    def extend(chosen: list[tuple[int, ...]], start: int) -> list[tuple[int, ...]] | None:
        if len(chosen) == NUM_FACTORS - 1:
            return chosen
        for i in range(start, len(cands)):
            if all(balanced(cands[i], c) for c in chosen):
                found = extend([*chosen, cands[i]], i + 1)
                if found is not None:
                    return found
        return None

    found = extend([], 0)
    if found is None or any(len(c) != n for c in found):
        raise RuntimeError("no difference matrix D(6, 5, 3) found")
    return found


def held_out() -> list[str]:
    """The 225 in-space codes not in the orthogonal array (lexicographic)."""
    train = set(orthogonal_array())
    return [c for c in all_codes() if c not in train]


def eval_codes(seed: int = 0, n: int = RUNS) -> list[str]:
    """The standard in-space evaluation set: a seeded draw of `n` held-out codes (sorted)."""
    return sorted(random.Random(f"eval/{seed}").sample(held_out(), n))


def design_codes(design: str, seed: int = 0, single: str = "00000") -> list[str]:
    """The training configurations of a design (see the module docstring)."""
    if design == "single":
        return [check_code(single)]
    if design == "first-order":
        return [str(level) * NUM_FACTORS for level in range(NUM_LEVELS)]
    if design == "random-18":
        return sorted(random.Random(f"random-18/{seed}").sample(all_codes(), RUNS))
    if design == "oa-18":
        return list(orthogonal_array())
    if design == "all-243":
        return all_codes()
    raise ValueError(f"unknown design {design!r}; known: {', '.join(DESIGNS)}")
