"""`harnessrl serve` (run the proxy over an engine, by hand), `harnessrl calls show` (read captures)
and `harnessrl calls export` (rollout folders as ATIF trajectories, `report.export`).

`serve` runs in open mode: any API key maps to one `default` session, and `/r/<token>/` prefixes of
sessions opened by code still work. With a capture directory, every call is appended to
`<capture-dir>/default/calls.jsonl` as soon as it is recorded (flushed: a SIGKILL loses nothing that
was answered); on SIGINT or SIGTERM (handlers installed explicitly, so also when SIGINT was ignored at
start, as for `cmd &` in a script or nohup) the server stops and the file is rewritten in order.
"""

from __future__ import annotations

import asyncio
import json
import signal
from pathlib import Path
from typing import Annotated, Any

import typer

from harnessrl.config import ConfigError, load_config, parse_override
from harnessrl.formats.calls import read_calls
from harnessrl.types import HarnessRLError, ModelCall

calls_app = typer.Typer(help="Inspect captured model calls.", no_args_is_help=True)


def serve(
    model: str = typer.Option("default", help="`default`, `tiny-qwen3`, or a local HF checkpoint folder."),
    port: int = typer.Option(8000, help="TCP port (0 = a free one)."),
    host: str = typer.Option("127.0.0.1", help="Interface to listen on."),
    engine: str = typer.Option("hf", help="Engine type: hf | scripted."),
    script: str | None = typer.Option(
        None, help="For --engine scripted: JSON/JSONL file of assistant turns."
    ),
    capture_dir: str | None = typer.Option(None, help="Flush captured calls here on exit."),
    config: Path | None = typer.Option(None, "--config", "-c", help="TOML config file."),
    override: list[str] = typer.Option(
        [], "--override", "-o", help="Dotted override, e.g. -o proxy.keepalive_s=1"
    ),
    print_config: str | None = typer.Option(
        None,
        "--print-config",
        metavar="HARNESS",
        help="Print a bash script that configures and runs HARNESS (gemini-cli, claude-code, codex, "
        "hermes, ...) against this server, as every rollout does, and exit without serving.",
    ),
    home: Path | None = typer.Option(
        None, help="With --print-config: the HOME its config goes to (default <cache>/by-hand/HARNESS)."
    ),
    option: list[str] = typer.Option(
        [], "--option", help="With --print-config: an adapter switch key=value (claude-code bare=true)."
    ),
) -> None:
    """Serve the model behind the Anthropic Messages, OpenAI Chat / Responses and Gemini APIs; point
    any harness at it by hand (`--print-config gemini-cli` prints the exact env vars, config files and
    command line; docs/serve.md)."""
    if print_config is not None:
        _print_config(print_config, host, port, home, option)
        return
    try:
        overrides = [*override, f"engine.type={json.dumps(engine)}", f"engine.model={json.dumps(model)}"]
        overrides += [f"proxy.port={port}", f"proxy.host={json.dumps(host)}"]
        if script is not None:
            overrides.append(f"engine.script={json.dumps(script)}")
        if capture_dir is not None:
            overrides.append(f"proxy.capture_dir={json.dumps(capture_dir)}")
        cfg = load_config(config, overrides)
    except ConfigError as e:
        raise typer.BadParameter(str(e)) from None
    from harnessrl.proxy.server import run

    try:
        run(_serve(cfg))
    except KeyboardInterrupt:
        pass
    except HarnessRLError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(1) from None


def _print_config(name: str, host: str, port: int, home: Path | None, options: list[str]) -> None:
    from harnessrl.cache import cache_root
    from harnessrl.harnesses import get_harness
    from harnessrl.harnesses.by_hand import hand_config, render_script

    if port == 0:
        raise typer.BadParameter("--print-config needs the --port the server will listen on, not 0")
    client_host = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
    try:
        switches = {}
        for text in options:
            parts, value = parse_override(text)
            if len(parts) != 1:
                raise ConfigError(f"--option {text!r} must look like key=value (no dots)")
            switches[parts[0]] = value
        harness = get_harness(name)
        where = (home or cache_root() / "by-hand" / harness.name).absolute()
        config = hand_config(harness, f"http://{client_host}:{port}", where, str(Path.cwd()), switches)
    except (HarnessRLError, ValueError) as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(2) from None
    typer.echo(render_script(config), nl=False)


async def _serve(cfg: Any) -> None:
    from harnessrl.chat.format import ChatFormat
    from harnessrl.engines import build_engine
    from harnessrl.proxy.deps import default_deps
    from harnessrl.proxy.server import ProxyServer
    from harnessrl.proxy.sessions import SessionStore

    engine = build_engine(cfg.engine)
    sessions = SessionStore(cfg.proxy.capture_dir, open_mode=True)
    deps = default_deps(
        engine, ChatFormat(engine.tokenizer), sessions, cfg.proxy, cfg.engine.sampling, cfg.engine.model
    )
    server = ProxyServer(deps, freeze_heap=True)  # this process is the proxy
    await server.start()
    typer.echo(
        f"harnessrl proxy on {server.url} (engine {cfg.engine.type}, model {cfg.engine.model})", err=True
    )
    typer.echo(f"  Anthropic: ANTHROPIC_BASE_URL={server.url}   OpenAI: base_url={server.url}/v1", err=True)
    typer.echo(f"  Gemini: GOOGLE_GEMINI_BASE_URL={server.url} (the SDK's http_options.base_url)", err=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
        await server.stop()
        written = sessions.close("default")
        if cfg.proxy.capture_dir:
            where = Path(cfg.proxy.capture_dir) / "default" / "calls.jsonl"
            typer.echo(f"{len(written)} calls written to {where}", err=True)
        await engine.close()


def _preview(call: ModelCall, width: int = 60) -> str:
    parts = [call.text.replace("\n", " ")] if call.text else []
    parts += [f"{tc.name}({json.dumps(tc.arguments)})" for tc in call.tool_calls]
    if call.error:
        parts.append(f"error: {call.error}")
    text = " ".join(parts)
    return text if len(text) <= width else text[: width - 1] + "…"


@calls_app.command("show")
def show(
    path: Path = typer.Argument(..., exists=True, dir_okay=False, help="calls.jsonl or rollout JSONL"),
) -> None:
    """Pretty-print captured calls with token counts."""
    from rich.table import Table

    from harnessrl.progress import console

    try:
        calls = read_calls(path)
    except ValueError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(1) from None
    table = Table(title=f"{path} ({len(calls)} calls)")
    for column in ("#", "dialect", "model", "render", "prompt", "output", "finish", "flags", "text"):
        table.add_column(column, justify="right" if column in ("#", "prompt", "output") else "left")
    for c in calls:
        flags = [
            *c.tags,
            *(["partial"] if c.partial else []),
            *([f"replay_of={c.replay_of[:8]}"] if c.replay_of else []),
        ]
        table.add_row(
            str(c.index),
            c.dialect,
            c.requested_model,
            c.render,
            str(len(c.prompt_ids)),
            str(len(c.output_ids)),
            c.finish_reason,
            ",".join(f for f in flags if f != "stream"),
            _preview(c),
        )
    console().print(table)


@calls_app.command("export")
def calls_export(
    path: Annotated[
        Path, typer.Argument(help="A rollout folder, or a folder with rollout folders below it.")
    ],
    fmt: Annotated[str, typer.Option("--format", help="Export format: atif (Harbor's ATIF v1.8).")] = "atif",
    out: Annotated[Path | None, typer.Option("--out", help="File to write (one rollout only).")] = None,
    tokenizer: Annotated[
        str | None,
        typer.Option("--tokenizer", help="tokenizer.json, its folder, or qwen3 (default: recorded)."),
    ] = None,
    ids: Annotated[bool, typer.Option("--ids", help="Do not decode: token ids only.")] = False,
) -> None:
    """Export rollouts for other tools: <rollout>/trajectory.json (ATIF v1.8: steps, tool calls,
    observations, per step the prompt and completion token ids and log-probs)."""
    from harnessrl.formats import FormatError
    from harnessrl.report.export import export_rollouts
    from harnessrl.trace.load import TraceInputError

    try:
        done = export_rollouts(path, fmt, out, tokenizer, ids, echo=typer.echo)
    except (FormatError, TraceInputError) as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(2) from None
    for note in done.notes:
        typer.echo(note, err=True)
