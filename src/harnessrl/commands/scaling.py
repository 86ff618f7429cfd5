"""`harnessrl harness-space show|pairs`: the factor space, a design with its balance check, K-pairing.

harnessrl harness-space show --design oa-18
harnessrl harness-space pairs --k 2 --pairing nearest --limit 8
"""

from __future__ import annotations

from itertools import combinations
from typing import Annotated

import typer

from harnessrl.scaling import (
    FACTORS,
    describe,
    design_codes,
    eval_codes,
    hamming,
    harness_name,
    held_out,
    pair_codes,
)
from harnessrl.scaling.designs import DESIGNS, pair_counts
from harnessrl.scaling.pairing import MODES
from harnessrl.scaling.space import NUM_FACTORS, all_codes

app = typer.Typer(help="The white-box harness factor space, designs and K-pairing.", no_args_is_help=True)

Design = Annotated[str, typer.Option(help=f"One of: {', '.join(DESIGNS)}.")]
Seed = Annotated[int, typer.Option(help="Seed of random-18, the eval draw and the pairing.")]


def balance_line(codes: list[str]) -> str:
    """`strength 2: yes (every level pair of every factor pair 2 times)` or the spread of pair counts."""
    counts = [
        pair_counts(codes, i, j).get((a, b), 0)
        for i, j in combinations(range(NUM_FACTORS), 2)
        for a in "012"
        for b in "012"
    ]
    lo, hi = min(counts), max(counts)
    if lo == hi:
        return f"balance: strength 2, yes: each of the 9 level pairs of every factor pair appears {lo} times"
    return f"balance: not strength 2: level-pair counts range {lo}..{hi} over the 10 factor pairs"


@app.command()
def show(design: Design = "oa-18", seed: Seed = 0) -> None:
    """Factors and levels, the configurations of a design with its balance check, the held-out split."""
    try:
        codes = design_codes(design, seed)
    except ValueError as e:
        raise typer.BadParameter(str(e)) from None
    typer.echo(f"factors ({len(all_codes())} configurations, one digit per factor):")
    for i, (name, levels) in enumerate(FACTORS):
        typer.echo(f"  {i} {name:<14} " + "  ".join(f"{n}={lv}" for n, lv in enumerate(levels)))
    typer.echo(f"design {design}: {len(codes)} configurations")
    for code in codes:
        typer.echo(f"  {harness_name(code)}  " + " ".join(describe(code).values()))
    typer.echo(balance_line(codes))
    train = set(codes)
    rest = [c for c in all_codes() if c not in train]
    typer.echo(f"held-out in-space: {len(rest)} configurations outside the design")
    typer.echo(
        f"standard eval set (oa-18 held-out: {len(held_out())}; seed {seed}): " + " ".join(eval_codes(seed))
    )


@app.command()
def pairs(
    k: Annotated[int, typer.Option(help="Configurations per task.")] = 2,
    pairing: Annotated[str, typer.Option(help=f"One of: {', '.join(MODES)}.")] = "nearest",
    design: Design = "oa-18",
    seed: Seed = 0,
    tasks: Annotated[str, typer.Option(help="Task set whose ids are paired.")] = "bundled",
    limit: Annotated[int, typer.Option(help="How many tasks to show.")] = 8,
) -> None:
    """The K configurations of a sample of tasks (anchor first, Hamming distance to the anchor)."""
    from harnessrl.tasks import load_tasks

    codes = design_codes(design, seed)
    ids = [t.id for t in load_tasks(tasks, split="train").tasks][:limit]
    for task_id in ids:
        try:
            chosen = pair_codes(codes, k, pairing, seed, task_id)
        except ValueError as e:
            raise typer.BadParameter(str(e)) from None
        cells = [f"{harness_name(c)} (d={hamming(chosen[0], c)})" for c in chosen]
        typer.echo(f"{task_id}: " + ", ".join(cells))
