"""`harnessrl harness list|install|lock [NAMES...]`: which harnesses exist, their pins, install them.

`install` installs the pinned npm and PyPI harnesses from their committed lockfiles into the
project-local cache (see `harnesses.install`); CI runs it before the `harness` tests so that their time
is spent running harnesses, not downloading them. `lock` resolves each pinned package again and
rewrites its lockfile (`scripts/lock_harnesses`): review the diff before committing it. Exit status 1
when any install or lock failed; each harness's line ends with its wall seconds and a last line gives
the total. `list` prints every column in full when its output is not a terminal
(a log, a pipe), and `list --json` one JSON object per harness.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from harnessrl.harnesses.adapter import Harness
from harnessrl.harnesses.registry import HARNESSES, get_harness
from harnessrl.types import HarnessError

app = typer.Typer(help="List, install and lock the agent harnesses.", no_args_is_help=True)
INSTALLED = [n for n, h in HARNESSES.items() if h.installer in ("npm", "pypi")]
"""What `install` and `lock` take by default: every harness from a package registry."""
NAMES = Annotated[
    list[str] | None, typer.Argument(help="Harnesses (default: every npm and PyPI one).", show_default=False)
]


def describe(name: str, harness: Harness) -> dict[str, Any]:
    """One harness as `list` shows it."""
    folder = harness.install_dir()
    return {
        "harness": name,
        "package": harness.package,
        "version": harness.version,
        "from": harness.installer,
        "api": list(dict.fromkeys(m.dialect for m in harness.modes)),
        "installed": harness.is_installed(),
        "folder": str(folder),
    }


def console() -> Console:
    """A terminal's own width; elsewhere wide enough that no cell is cut."""
    return Console() if sys.stdout.isatty() else Console(width=100_000, soft_wrap=True)


@app.command("list")
def list_harnesses(
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per line.")] = False,
) -> None:
    """Every registered harness, its pinned package, the API it speaks and whether it is installed."""
    rows = [describe(name, harness) for name, harness in HARNESSES.items()]
    if as_json:
        for row in rows:
            typer.echo(json.dumps(row))
        return
    table = Table("harness", "package", "from", "API", "installed at")
    for row in rows:
        where = "(system shell)" if row["from"] == "none" else (row["folder"] if row["installed"] else "-")
        table.add_row(row["harness"], row["package"] or "-", row["from"], ", ".join(row["api"]) or "-", where)
    console().print(table)


@app.command()
def install(names: NAMES = None) -> None:
    """Install harnesses from their lockfiles into the cache (once; safe to run concurrently)."""
    _each(names, lambda h: h.ensure_installed())


@app.command()
def lock(names: NAMES = None) -> None:
    """Resolve each harness's pinned package again and rewrite its lockfile (then review the diff)."""
    _each(names, lambda h: h.lock())


def _each(names: list[str] | None, act: Callable[[Any], object]) -> None:
    """`act` on each harness, one line each with its wall seconds, then the total."""
    out = console()
    failed = 0
    names = names or INSTALLED
    start = time.monotonic()
    for name in names:
        began = time.monotonic()
        try:
            done = act(get_harness(name))
        except HarnessError as e:
            failed += 1
            out.print(
                f"{name}: {e} ({time.monotonic() - began:.1f} s)", style="red", markup=False, highlight=False
            )
        else:
            out.print(f"{name}: {done} ({time.monotonic() - began:.1f} s)", markup=False, highlight=False)
    total = time.monotonic() - start
    out.print(
        f"{len(names) - failed} of {len(names)} harnesses in {total:.1f} s", markup=False, highlight=False
    )
    raise typer.Exit(1 if failed else 0)
