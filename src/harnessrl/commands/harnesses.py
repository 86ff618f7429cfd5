"""`harnessrl harness list|install [NAMES...]`: which harnesses exist, pinned versions, install them.

`install` puts the pinned npm and PyPI packages in the project-local cache (see `harnesses.install`); CI runs
it before the `harness` tests so that their time is spent running harnesses, not downloading them.
Exit status 1 when any install failed.
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from harnessrl.harnesses.install import installed_folder
from harnessrl.harnesses.registry import HARNESSES, get_harness
from harnessrl.types import HarnessError

app = typer.Typer(help="List and install the agent harnesses.", no_args_is_help=True)
INSTALLED = [n for n, h in HARNESSES.items() if h.installer in ("npm", "pypi")]
"""What `install` installs by default: every harness from a package registry."""


@app.command("list")
def list_harnesses() -> None:
    """Every registered harness, its pinned package, the API it speaks and whether it is installed."""
    table = Table("harness", "package", "from", "API", "installed at")
    for name, harness in HARNESSES.items():
        where = str(installed_folder(harness) or "-")
        where = "(system shell)" if harness.installer == "none" else where
        api = ", ".join(dict.fromkeys(m.dialect for m in harness.modes)) or "-"
        table.add_row(name, harness.package or "-", harness.installer, api, where)
    Console().print(table)


@app.command()
def install(
    names: Annotated[
        list[str] | None, typer.Argument(help="Harnesses to install (default: all npm and PyPI ones).")
    ] = None,
) -> None:
    """Install harnesses into the cache (once; safe to run concurrently)."""
    console = Console()
    failed = 0
    for name in names or INSTALLED:
        try:
            path = get_harness(name).ensure_installed()
            console.print(f"{name}: {path}")
        except HarnessError as e:
            failed += 1
            console.print(f"[red]{name}: {e}[/red]")
    raise typer.Exit(1 if failed else 0)
