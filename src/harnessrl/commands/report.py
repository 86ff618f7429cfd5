"""`harnessrl plot RUN_DIR` and `harnessrl report RUN_DIR` (see `report.plot` and `report.page`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

RunDir = Annotated[
    Path, typer.Argument(help="A run folder (train.out_dir: metrics.jsonl, rollouts/, eval/).")
]


def plot(
    run_dir: RunDir,
    out: Annotated[Path | None, typer.Option(help="Folder for the PNGs (default RUN_DIR/plots).")] = None,
) -> None:
    """Write PNG curves of a run: reward, pass rate, entropy, mismatch, filter counts, step time."""
    from harnessrl.report.plot import PlotError, plot_run
    from harnessrl.report.runs import load_run

    run = load_run(run_dir)
    for note in run.notes:
        typer.echo(f"note: {note}", err=True)
    if not run.metrics:
        typer.echo(f"error: {run_dir / 'metrics.jsonl'}: no metrics records", err=True)
        raise typer.Exit(2)
    try:
        paths = plot_run(run.metrics, out if out is not None else run_dir / "plots")
    except PlotError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(2) from None
    for p in paths:
        typer.echo(f"wrote {p}")


def report(
    run_dir: RunDir,
    out: Annotated[Path | None, typer.Option(help="The HTML page (default RUN_DIR/report.html).")] = None,
    max_trees: Annotated[int, typer.Option(help="Tree views to write under RUN_DIR/trees.")] = 40,
) -> None:
    """Write one self-contained HTML page: curves, eval tables, rollouts with links to their trees."""
    from harnessrl.report.page import write_report

    if not run_dir.is_dir():
        typer.echo(f"error: {run_dir}: no such run folder", err=True)
        raise typer.Exit(2)
    typer.echo(f"wrote {write_report(run_dir, out, max_trees)}")
