"""Rollout folders exported for other tools: `harnessrl calls export --format atif` (`formats/atif.py`).

A path is one rollout folder (it holds `rollout.json` or `calls.jsonl`) or a folder with rollout
folders anywhere below it (a run's `rollouts/`); each gets its `trajectory.json` beside its calls
(or at `out`, for a single rollout). Text is decoded with the tokenizer the calls recorded
(`trace.decode.choose_decoder`: the same choice and notes as `harnessrl tree show`); without one the
ids alone are written.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from harnessrl.formats import FormatError
from harnessrl.formats.atif import TRAJECTORY_FILE, trajectory, write_trajectory
from harnessrl.formats.rollout_dir import is_rollout_dir, read_rollout, rollout_folders
from harnessrl.trace.decode import choose_decoder

FORMATS = ("atif",)


@dataclass
class Exported:
    """What one export wrote, and the notes on how it decoded."""

    written: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def export_rollouts(
    path: Path,
    fmt: str = "atif",
    out: Path | None = None,
    tokenizer: str | None = None,
    ids_only: bool = False,
    echo: Callable[[str], None] | None = None,
) -> Exported:
    """Write the trajectory of every rollout folder at `path` (module docstring). FormatError for an
    unknown format, a path holding no rollout, `out` with several rollouts, or an unreadable rollout."""
    if fmt not in FORMATS:
        raise FormatError(f"unknown export format {fmt!r} (expected one of {', '.join(FORMATS)})")
    dirs = [path] if is_rollout_dir(path) else rollout_folders(path)
    if not dirs:
        raise FormatError(f"{path}: no rollout folder (rollout.json or calls.jsonl) here or below")
    if out is not None and len(dirs) > 1:
        raise FormatError(f"{path}: --out names one file, but {len(dirs)} rollout folders were found")
    done = Exported()
    for rdir in dirs:
        rollout = read_rollout(rdir)
        choice = choose_decoder(rollout.calls, tokenizer, ids_only=ids_only)
        done.notes += [f"{rdir}: {note}" for note in choice.notes]
        decode = choice.decoder.decode if choice.decoder is not None else None
        target = out if out is not None else rdir / TRAJECTORY_FILE
        write_trajectory(target, trajectory(rollout, decode))
        done.written.append(target)
        if echo is not None:
            echo(f"wrote {target}")
    return done
