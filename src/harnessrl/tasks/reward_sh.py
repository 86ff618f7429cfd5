"""ClawGym's `reward/reward.sh`: is it the canonical wrapper, and what that wrapper makes of a result.

Every published ClawGym task ships the same two-line `reward.sh` (a copy is
`tests/fixtures/clawgym-format/example_split/task_0000/reward/reward.sh`):

    python3 /root/.openclaw/workspace/reward/check.py /root/.openclaw/workspace \\
      | python3 -c '<WRAPPER_CODE: the equal-weight mean of the printed dict>'

That script only hard-codes where the original runs mounted the task, so harnessrl never runs it: the
verifier runs the `.py` entry itself with the real workspace path. A `reward.sh` that is anything else
(another aggregation, extra steps, a different program) is the task's real entry point; the loader then
sets `Checker.shell_entry = "reward/reward.sh"` so the checker runner runs that script instead (its
last printed line is the reward, as in the original runs).

`is_canonical_wrapper` accepts the wrapper with any shebang, `set` options, comments and blank lines,
any absolute mount path and any `reward/*.py` checker name; the pipeline and the python code must be
exactly the upstream ones.

`wrapper_score` is the wrapper's arithmetic as a pure function, for the checker runner: each metric
value goes through `float(v)`, so numeric strings (`"1.0"`, `" 0 "`, `"1e0"`) and booleans count as
their float value, and anything `float()` refuses fails the run (upstream: reward.sh exits non-zero,
the reward is 0.0). A dict is averaged; a bare number is the score; an empty dict or any other JSON
value prints 0.0.
"""

from __future__ import annotations

import re
from typing import Any

WRAPPER_CODE = (
    "import json, sys; data = json.loads(sys.stdin.read().strip()); "
    "print(sum(float(v) for v in data.values()) / len(data) if isinstance(data, dict) and data "
    "else float(data) if isinstance(data, (int, float)) else 0.0)"
)
"""The python program of the canonical wrapper, exactly as ClawGym ships it."""

CANONICAL_REWARD_SH = (
    "#!/usr/bin/env bash\nset -euo pipefail\n\n"
    "python3 /root/.openclaw/workspace/reward/check.py /root/.openclaw/workspace"
    f" | python3 -c '{WRAPPER_CODE}'\n"
)
"""The canonical `reward.sh` for the default mount dir, byte for byte (what generated tasks ship)."""

_PIPELINE = re.compile(
    r"python3 (?P<root>/\S+?)/(?P<entry>reward/\S+\.py) (?P<ws>/\S+) \| python3 -c '"
    + re.escape(WRAPPER_CODE)
    + "'"
)


def _significant_lines(text: str) -> list[str]:
    lines = [line.strip() for line in text.splitlines()]
    return [line for line in lines if line and not line.startswith(("#", "set "))]


def is_canonical_wrapper(text: str) -> bool:
    """True when `text` is ClawGym's standard reward wrapper (see the module docstring)."""
    lines = _significant_lines(text)
    return len(lines) == 1 and _PIPELINE.fullmatch(lines[0]) is not None


def wrapper_score(data: Any) -> tuple[float, str | None]:
    """What the canonical wrapper prints for a checker's parsed JSON -> (score, None) or (0.0, reason)."""
    if isinstance(data, dict) and data:
        total = 0.0
        for key, value in data.items():
            try:
                total += float(value)
            except (TypeError, ValueError):
                return 0.0, f"metric {key!r} is not a number: {value!r}"
        return total / len(data), None
    if isinstance(data, (int, float)):
        return float(data), None
    return 0.0, None
