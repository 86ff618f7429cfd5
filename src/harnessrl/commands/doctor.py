"""`harnessrl doctor [--quick] [--json]`: will a rollout run on this machine?

One line per check (complete, whatever the terminal width), and under each one that is not ok the
command that fixes it; fast checks print at once, the ones that run programs (Node, the system
python, a real sandbox, each harness's version) follow, and `--quick` leaves those out. Exit status
1 when a check fails; warnings (optional things: npm harnesses, task images, cgroup caps) do not.
"""

from __future__ import annotations

import dataclasses
import json
import time
from typing import Annotated

import typer

from harnessrl.doctor import Machine, Result, all_checks, run_checks
from harnessrl.doctor.check import header, summary, table_lines


def doctor(
    quick: Annotated[
        bool, typer.Option("--quick", help="Skip the checks that run programs (Node, sandbox, harnesses).")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object, not the table.")] = False,
) -> None:
    """Check what a rollout needs on this machine; print the command that fixes each problem."""
    started = time.monotonic()
    checks = all_checks(Machine())
    skipped = [c.name for c in checks if c.slow] if quick else []
    width = max(len(c.name) for c in checks)

    def show(result: Result) -> None:
        for line in table_lines(result, width):
            typer.echo(line)

    if not as_json:
        typer.echo(header(width))
    results = run_checks(checks, quick=quick, on_result=None if as_json else show)
    failed = any(r.status == "fail" for r in results)
    if as_json:
        rows = [dataclasses.asdict(r) for r in results]
        typer.echo(json.dumps({"ok": not failed, "checks": rows, "skipped": skipped}, indent=1))
    else:
        typer.echo(summary(results, len(skipped), time.monotonic() - started))
    raise typer.Exit(1 if failed else 0)
