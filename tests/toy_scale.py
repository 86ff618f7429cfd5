"""What the experiments' end-to-end tests on a toy scale share (test_quickstart, test_ablation,
test_transfer): the tiny model and one step of each kind, one task family, and a run's echoed lines."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from harnessrl.config import load_config

ONE_STEP_EACH = [
    'engine.model="tiny-qwen3"',
    "sft.steps=1",
    "sft.batch_size=2",
    "sft.heldout_every=0",
    "train.steps=1",
    "train.tasks_per_step=1",
    "train.group_size=2",
]
"""The toy-scale experiments' model and their one SFT and one RL step on one task."""


def toy_tasks(section: str, out: Path, *, train: int, heldout: int) -> list[str]:
    """Overrides of experiment `section`: its folder `out`, and `train` training and `heldout` held-out
    tasks of the one family create_file."""
    return [
        f"{section}.out_dir={out}",
        f'{section}.families=["create_file"]',
        f"{section}.train_per_family={train}",
        f"{section}.heldout_per_family={heldout}",
    ]


async def run_echoed(
    run: Callable[..., Awaitable[dict[str, Any]]], config: Path, overrides: list[str]
) -> tuple[dict[str, Any], list[str]]:
    """What `run` returns on the configuration `config` with `overrides`, and the lines it echoed."""
    lines: list[str] = []
    return await run(load_config(config, overrides), echo=lines.append), lines
