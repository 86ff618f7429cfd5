"""`harnessrl env build TASK...`: make tasks' images ready before any rollout (build or pull, unpack)."""

from __future__ import annotations

from pathlib import Path

import typer

from harnessrl.images.resolve import provide_image
from harnessrl.images.spec import task_image_spec
from harnessrl.types import ImageError

app = typer.Typer(help="Task environments: OCI images as the sandbox's root.", no_args_is_help=True)


@app.command()
def build(
    tasks: list[Path] = typer.Argument(..., help="Harbor task folders (task.toml, environment/Dockerfile)."),
    pull: bool = typer.Option(True, help="Pull named images from a registry when no local store has them."),
) -> None:
    """Build or pull each task's image and unpack it once (cached by digest): prints its digest, the
    time each stage took and the unpacked size."""
    failed = 0
    for task in tasks:
        try:
            report = provide_image(task_image_spec(task), pull=pull)
        except ImageError as e:
            typer.echo(f"error: {e}", err=True)
            failed += 1
            continue
        root = report.root
        typer.echo(
            f"{task}: {root.digest} ({root.ref}) -> {root.path}\n"
            f"  base image {report.base_s:.1f} s, build/pull {report.build_s:.1f} s, "
            f"unpack {report.unpack_s:.1f} s, {root.bytes / 2**20:.0f} MiB"
        )
    if failed:
        raise typer.Exit(1)
