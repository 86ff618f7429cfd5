"""`harnessrl harness list|install [NAMES...]`: which harnesses exist, pinned versions, install them.

`install` puts the pinned npm packages in the project-local cache (see `harnesses.install`); CI runs
it before the `harness` tests so that their time is spent running harnesses, not downloading them.
Exit status 1 when any install failed.
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from harnessrl.harnesses.install import MARKER, harness_dir
from harnessrl.harnesses.registry import HARNESSES, get_harness
from harnessrl.types import HarnessError

app = typer.Typer(help="List and install the agent harnesses.", no_args_is_help=True)
NPM_HARNESSES = ["claude-code", "codex", "openclaw"]


@app.command("list")
def list_harnesses() -> None:
    """Every registered harness, its pinned npm package and whether it is installed."""
    table = Table("harness", "npm package", "installed at")
    root = harness_dir()
    for name, harness in HARNESSES.items():
        folder = next((p for p in sorted(root.glob(f"{name}-*")) if (p / MARKER).exists()), None)
        where = "(system shell)" if not harness.package else str(folder) if folder else "-"
        table.add_row(name, harness.package or "-", where)
    Console().print(table)


@app.command()
def install(
    names: Annotated[
        list[str] | None, typer.Argument(help="Harnesses to install (default: all npm ones).")
    ] = None,
) -> None:
    """Install harnesses into the cache (once; safe to run concurrently)."""
    console = Console()
    failed = 0
    for name in names or NPM_HARNESSES:
        try:
            path = get_harness(name).ensure_installed()
            console.print(f"{name}: {path}")
        except HarnessError as e:
            failed += 1
            console.print(f"[red]{name}: {e}[/red]")
    raise typer.Exit(1 if failed else 0)
