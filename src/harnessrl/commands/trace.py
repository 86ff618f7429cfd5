"""`harnessrl tree show|stats`: look at the prefix trees of captured rollouts.

    harnessrl tree show runs/rollouts/r0001                 # indented text
    harnessrl tree show calls.jsonl --html tree.html --tokenizer qwen3
    harnessrl tree stats runs/rollouts/*                    # aggregated counts as JSON

A rollout is a directory (`calls.jsonl`, optional `rollout.json`) or a calls JSONL file. `stats`
skips, with a one-line note on stderr, paths that are neither (the `summary.json` that
`harnessrl rollout` writes next to its rollout folders, a folder without either file). Text is decoded
with the tokenizer the calls recorded (`trace.decode`, `tokenizers` library, no torch); `--tokenizer`
(a tokenizer.json file, a folder holding one, or `qwen3`) decodes older records, and one that is not
the recorded tokenizer is an error; `--ids` shows token ids. The
`[trace]` section of `--config` and `-o trace.key=value` overrides choose the filters. Exit code 2
when an input cannot be read.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from harnessrl.config import ConfigError, load_config
from harnessrl.formats.rollout_dir import is_rollout_dir
from harnessrl.trace.build import trace_rollout
from harnessrl.trace.config import TraceConfig
from harnessrl.trace.decode import Decode, choose_decoder, load_tokenizer
from harnessrl.trace.load import TraceInputError, load_rollout
from harnessrl.trace.stats import aggregate_stats
from harnessrl.trace.views import engine_line, render_html, render_text

app = typer.Typer(help="Prefix trees of rollouts: show them, count their tokens.", no_args_is_help=True)

ConfigOpt = Annotated[Path | None, typer.Option("--config", "-c", help="TOML config ([trace] section).")]
OverrideOpt = Annotated[
    list[str] | None, typer.Option("--override", "-o", help="e.g. trace.keep_subagents=true")
]


def _trace_config(config: Path | None, overrides: list[str] | None) -> TraceConfig:
    try:
        return load_config(config, overrides or []).trace
    except ConfigError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(2) from None


def is_rollout_path(path: Path) -> bool:
    """A folder with `calls.jsonl` or `rollout.json`, or a `.jsonl` file; a missing path counts (it fails)."""
    if path.is_dir():
        return is_rollout_dir(path)
    return not path.exists() or path.suffix == ".jsonl"


def load_decoder(spec: str) -> Decode:
    """A decode function from a tokenizer.json path, a folder with one, or `qwen3`."""
    return load_tokenizer(spec).decode


@app.command()
def show(
    path: Annotated[str, typer.Argument(help="Rollout directory or calls JSONL file.")],
    html: Annotated[
        Path | None, typer.Option("--html", help="Also write a self-contained HTML page.")
    ] = None,
    tokenizer: Annotated[
        str | None,
        typer.Option("--tokenizer", help="tokenizer.json, its folder, or qwen3 (default: the recorded one)."),
    ] = None,
    ids: Annotated[bool, typer.Option("--ids", help="Show token ids, do not decode.")] = False,
    config: ConfigOpt = None,
    override: OverrideOpt = None,
) -> None:
    """Print a rollout's prefix tree: per node its kind, token counts, kept or dropped and why."""
    cfg = _trace_config(config, override)
    try:
        rollout = load_rollout(path)
        choice = choose_decoder(rollout.calls, tokenizer, ids_only=ids)
    except TraceInputError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(2) from None
    for note in choice.notes:
        typer.echo(note, err=True)
    decode = choice.decoder.decode if choice.decoder is not None else None
    extra = [line] if (line := engine_line(rollout.calls)) else []
    tree = trace_rollout(rollout, cfg)
    typer.echo(render_text(tree, decode, extra=extra), nl=False)
    if html is not None:
        html.write_text(render_html(tree, decode, extra=[*extra, *choice.notes]), encoding="utf-8")
        typer.echo(f"wrote {html}")


@app.command()
def stats(
    paths: Annotated[list[str], typer.Argument(help="Rollout directories or calls JSONL files.")],
    per_rollout: Annotated[
        bool, typer.Option("--per-rollout", help="Also print each rollout's stats.")
    ] = False,
    config: ConfigOpt = None,
    override: OverrideOpt = None,
) -> None:
    """Print tree statistics aggregated over rollouts (JSON): the three token counts and their ratios."""
    cfg = _trace_config(config, override)
    per: dict[str, dict[str, object]] = {}
    for p in paths:
        if not is_rollout_path(Path(p)):
            typer.echo(f"note: skipped {p}: not a rollout folder or calls .jsonl file", err=True)
            continue
        try:
            per[p] = trace_rollout(load_rollout(p), cfg).stats
        except TraceInputError as e:
            typer.echo(f"error: {e}", err=True)
            raise typer.Exit(2) from None
    if not per:
        typer.echo("error: no rollouts among the paths given", err=True)
        raise typer.Exit(2)
    out: dict[str, object] = {"aggregate": aggregate_stats(list(per.values()))}
    if per_rollout:
        out["rollouts"] = per
    typer.echo(json.dumps(out, indent=2))
