"""Harness scaling: the factor space of the white-box harness, designs of experiments, K-pairing.

Pure functions, no I/O: `space` (243 codes, Hamming distance, names), `designs` (the strength-2
orthogonal array of 18 runs, baseline designs, the held-out split), `pairing` (K configurations per
task, and which one an occasion uses). `train.schedule` turns them into rollout jobs.
"""

from harnessrl.scaling.designs import (
    DESIGNS,
    design_codes,
    eval_codes,
    held_out,
    is_strength2,
    orthogonal_array,
)
from harnessrl.scaling.pairing import MODES, occasion_code, pair_codes
from harnessrl.scaling.space import FACTORS, all_codes, code_of, describe, hamming, harness_name

__all__ = [
    "DESIGNS",
    "FACTORS",
    "MODES",
    "all_codes",
    "code_of",
    "describe",
    "design_codes",
    "eval_codes",
    "hamming",
    "harness_name",
    "held_out",
    "is_strength2",
    "occasion_code",
    "orthogonal_array",
    "pair_codes",
]
