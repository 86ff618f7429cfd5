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

`is_canonical_wrapper` accepts exactly one form (issue 31.2: a check that dropped any line starting
`set ` and took paths as `\\S+` let `set -e; echo 0.0` or a workspace argument `ws;echo${IFS}0.0;exit`
pass as canonical, so harnessrl scored what the script never printed). What may differ from the
canonical text, and nothing else:
- a first line that is one of the bash shebangs (`#!/usr/bin/env bash`, `#!/bin/bash`, `#!/usr/bin/bash`);
- blank lines, and whole comment lines (first non-blank character `#`);
- whole `set` lines of the options `-e`, `-u`, `-o pipefail` (any grouping: `set -euo pipefail`,
  `set -e -o pipefail`, `set -o errexit`), alone on their line;
- spaces and tabs between the pipeline's words, and a backslash-newline continuation between them;
- the mount path (the same absolute path as the folder holding `reward/` and as the workspace
  argument) and the checker's name (`reward/<name>.py`), both made only of `A-Za-z0-9._-` and `/`.
Lines end at `\\n` only (a `\\r` or any other byte bash does not split on makes it a shell entry); the
python program must be exactly `WRAPPER_CODE`.

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

_BLANK = "[ \t]"
_SAFE_PATH = r"(?:/[A-Za-z0-9._-]+)+"
_PIPELINE = re.compile(
    rf"python3{_BLANK}+(?P<root>{_SAFE_PATH})/(?P<entry>reward/[A-Za-z0-9_-][A-Za-z0-9._-]*\.py)"
    rf"{_BLANK}+(?P<ws>{_SAFE_PATH})/?{_BLANK}*\|{_BLANK}*python3{_BLANK}+-c{_BLANK}+'"
    + re.escape(WRAPPER_CODE)
    + f"'{_BLANK}*"
)
_SET_OPTION = rf"(?:-[eu]{{1,2}}|-[eu]{{0,2}}o{_BLANK}+pipefail|-o{_BLANK}+(?:errexit|nounset|pipefail))"
_SET_LINE = re.compile(rf"{_BLANK}*set(?:{_BLANK}+{_SET_OPTION})+{_BLANK}*")
_SHEBANGS = ("#!/usr/bin/env bash", "#!/bin/bash", "#!/usr/bin/bash")


def _commands(text: str) -> list[str] | None:
    """The logical lines bash would run (continuations joined; blank, comment and `set` lines
    dropped), or None when the text holds anything outside the one canonical form's alphabet."""
    if "\r" in text or "\x00" in text:
        return None
    lines = text.split("\n")
    if lines[0].startswith("#!") and lines[0].rstrip(" \t") not in _SHEBANGS:
        return None
    commands: list[str] = []
    pending = ""
    for raw in lines:
        line = pending + raw
        if not pending and (not line.strip(" \t") or line.lstrip(" \t").startswith("#")):
            continue
        if line.endswith("\\") and "'" not in line:
            pending = line[:-1]
            continue
        pending = ""
        if not line.isascii() or not line.replace("\t", " ").isprintable():
            return None
        if _SET_LINE.fullmatch(line) is None:
            commands.append(line.strip(" \t"))
    return None if pending else commands


def is_canonical_wrapper(text: str) -> bool:
    """True when `text` is ClawGym's standard reward wrapper in its one form (the module docstring)."""
    commands = _commands(text)
    if commands is None or len(commands) != 1:
        return False
    match = _PIPELINE.fullmatch(commands[0])
    return match is not None and match["ws"] == match["root"]


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
