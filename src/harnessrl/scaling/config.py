"""Config sections of `scaling/`: the harness-factor space a run trains over.

Assembled into `harnessrl.config.Config`, which re-exports them. A section module imports only
pydantic, `Section` and other section modules, so `harnessrl.config` never imports what they configure.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from harnessrl.config_section import Section


class HarnessSpaceConfig(Section):
    """Harness scaling (`harnessrl.scaling`): train over white-box configurations with K-pairing."""

    design: Literal["single", "first-order", "random-18", "oa-18", "all-243"] = "oa-18"
    """Training configurations: one, the 3 first-order ones, 18 random, the 18-run orthogonal array,
    or all 243."""
    k: int = Field(default=2, ge=1)
    """Configurations per task (visited on K consecutive occasions the task is scheduled)."""
    pairing: Literal["nearest", "repeat", "random"] = "nearest"
    """nearest = anchor + its K-1 nearest by Hamming distance; repeat = the anchor K times; random."""
    single: str = "00000"
    """The configuration of the `single` design."""
    seed: int | None = None
    """Seed of the random-18 design and of the pairing; None = `train.seed`."""
    options: dict[str, Any] = Field(default_factory=dict)
    """Whitebox switches for every configuration (`max_steps`, `command_timeout_s`, ...)."""
