"""K-pairing: which K training configurations each task is paired with, and which one an occasion uses.

    codes = pair_codes(train, k=2, mode="nearest", seed=0, task_id="task_0003")
    code = occasion_code(train, 2, "nearest", 0, "task_0003", occasion=5)   # codes[5 % 2]

For each task (seeded by (seed, task id), so the pairing never depends on the step or on other
tasks): draw an anchor uniformly from the training configurations, then
- `nearest` (the method): add its K-1 nearest other training configurations by Hamming distance,
  ties broken by a seeded random key per candidate;
- `repeat`: the anchor K times;
- `random`: K configurations drawn uniformly without replacement (the anchor is the first).
A task visits its K configurations on K consecutive occasions it is scheduled (occasion o uses
configuration o mod K); K = 1 is one configuration per task. Each (task, configuration) rollout set
is its own GRPO group (the schedule names the group).
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from harnessrl.scaling.space import hamming

MODES = ("nearest", "repeat", "random")


def pair_codes(train: Sequence[str], k: int, mode: str, seed: int, task_id: str) -> list[str]:
    """The K configurations of one task, anchor first (module docstring)."""
    if not train:
        raise ValueError("no training configurations to pair with")
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    if mode not in MODES:
        raise ValueError(f"unknown pairing {mode!r}; known: {', '.join(MODES)}")
    distinct = sorted(set(train))
    if mode != "repeat" and k > len(distinct):
        raise ValueError(f"pairing {mode!r} with k={k} needs at least {k} training configurations")
    rng = random.Random(f"pair/{seed}/{task_id}")
    anchor = distinct[rng.randrange(len(distinct))]
    if mode == "repeat":
        return [anchor] * k
    others = [c for c in distinct if c != anchor]
    if mode == "random":
        return [anchor, *rng.sample(others, k - 1)]
    tie = {c: rng.random() for c in others}
    return [anchor, *sorted(others, key=lambda c: (hamming(anchor, c), tie[c]))[: k - 1]]


def occasion_code(train: Sequence[str], k: int, mode: str, seed: int, task_id: str, occasion: int) -> str:
    """The configuration a task runs under on its `occasion`-th scheduling (0-based)."""
    codes = pair_codes(train, k, mode, seed, task_id)
    return codes[occasion % k]
