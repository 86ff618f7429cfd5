"""The harness factor space: five factors x three levels = 243 white-box configurations.

A configuration is a five-digit code, one level (0-2) per factor in `FACTORS` order: `01220` is a
terse prompt, file tools, JSON observations, compaction and a free ReAct loop. The level names are
those of the harness program's own modules (`harnesses/whitebox/agent/`, checked by a test).
"""

from __future__ import annotations

from itertools import product

from harnessrl.types import WHITEBOX, HarnessName

FACTORS: tuple[tuple[str, tuple[str, str, str]], ...] = (
    ("system_prompt", ("terse", "detailed", "persona")),
    ("tools", ("bash", "files", "fenced")),
    ("observation", ("raw", "truncated", "json")),
    ("context", ("full", "window", "compaction")),
    ("workflow", ("react", "plan", "verify")),
)
NUM_FACTORS = len(FACTORS)
NUM_LEVELS = 3
FAMILY = WHITEBOX
"""The registry family of the configurations (`HarnessName`): `whitebox:<code>`."""


def all_codes() -> list[str]:
    """The full space, in lexicographic order (243 codes)."""
    return ["".join(map(str, row)) for row in product(range(NUM_LEVELS), repeat=NUM_FACTORS)]


def check_code(code: str) -> str:
    if len(code) != NUM_FACTORS or any(c not in "012" for c in code):
        raise ValueError(f"a configuration is {NUM_FACTORS} digits 0-2, got {code!r}")
    return code


def hamming(a: str, b: str) -> int:
    """Number of factors on which two configurations differ."""
    return sum(x != y for x, y in zip(check_code(a), check_code(b), strict=True))


def describe(code: str) -> dict[str, str]:
    """`{factor: level name}` of a configuration."""
    return {name: levels[int(c)] for (name, levels), c in zip(FACTORS, check_code(code), strict=True)}


def harness_name(code: str) -> str:
    """The registry name of a configuration (`whitebox:01220`)."""
    return HarnessName.whitebox(check_code(code))


def code_of(harness: str) -> str:
    """Inverse of `harness_name`."""
    code = HarnessName.arg_of(harness, FAMILY)
    if code is None:
        raise ValueError(f"{harness!r} is not a whitebox configuration")
    return check_code(code)
