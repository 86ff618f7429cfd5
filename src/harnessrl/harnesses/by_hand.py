"""How to run a harness CLI by hand against `harnessrl serve`: the adapter's own launch, as a script.

    config = hand_config(get_harness("gemini-cli"), "http://127.0.0.1:8000", home, workspace)
    print(render_script(config))           # `harnessrl serve --print-config gemini-cli`

`hand_config` calls the adapter's `prepare` (the code every rollout runs) with the serve URL as the
endpoint and a HOME folder of the user's choosing, and keeps what it wrote and returned: the config
files under HOME, the environment, the command line. `render_script` turns that into a bash script
that writes those files, exports that environment (HOME included, so the user's own `~/.gemini`,
`~/.claude.json` ... are left alone) and runs the CLI on the prompt given as its first argument. So
what a user runs by hand is what a rollout runs, and cannot drift from it: Gemini CLI's
`security.auth.selectedType`, its folder trust and `--model` (without which its router's JSON-mode
call fails), Claude Code's model slots and `IS_SANDBOX`, Codex's provider table. The sandbox's
programs folder in a PATH it sets becomes the user's `$PATH`. `serve` takes any API key (one open
session); the adapters' default model names are the ones their CLIs know.
"""

from __future__ import annotations

import os
import shlex
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harnessrl.harnesses.adapter import Endpoint, Harness, HarnessContext
from harnessrl.harnesses.base import HarnessBase
from harnessrl.sandbox.programs import PROGRAMS_DIR

PROMPT = "HARNESSRL-PROMPT-3c9e1f"
"""Stands for the user's prompt while the adapter prepares; `"$PROMPT"` in the script."""
API_KEY = "harnessrl"
"""Any key does: `serve` maps every key to its one open session."""
EOF_MARK = "HARNESSRL_EOF"


@dataclass(frozen=True)
class HandConfig:
    """What a harness needs to run by hand against one endpoint (module docstring)."""

    harness: str
    package: str
    dialects: tuple[str, ...]
    """The APIs of its modes, the default's first (the script runs the default mode)."""
    base_url: str
    home: Path
    files: dict[str, str]
    """Config files under `home` (relative path -> text), as the adapter writes them."""
    env: dict[str, str]
    """The launch's environment (its PATH with `PROGRAMS_DIR` standing for the user's PATH)."""
    argv: list[str]
    """The command line; the executable is `executable`, the prompt `PROMPT`."""
    cwd: str
    executable: str
    """Where the pinned CLI is (or will be) installed: `harnessrl harness install NAME`."""
    installed: bool
    command: str
    """Its command name, for a CLI the user installed themselves."""


def hand_config(
    harness: Harness,
    base_url: str,
    home: Path,
    workspace: str,
    options: Mapping[str, Any] | None = None,
    cache_root: Path | None = None,
) -> HandConfig:
    """The adapter's launch of `harness` with `options` against `base_url`, with HOME at `home`
    (module docstring). ValueError for a harness that is not a CLI one can run by hand (`shell`,
    `whitebox`) or options it cannot take."""
    if not isinstance(harness, HarnessBase) or harness.installer not in ("npm", "pypi"):
        raise ValueError(f"{harness.name} is not a CLI to run by hand (only the npm and PyPI harnesses are)")
    harness.check_options(options or {})
    with tempfile.TemporaryDirectory(prefix="hrl-hand-") as tmp:
        host_home = Path(tmp)
        ctx = HarnessContext(
            prompt=PROMPT,
            endpoint=Endpoint(base_url=base_url.rstrip("/"), api_key=API_KEY),
            workspace=workspace,
            home=str(home),
            host_home=host_home,
            install_dir=harness.install_dir(cache_root),
            options=dict(options or {}),
        )
        launch = harness.prepare(ctx)
        files = {
            str(p.relative_to(host_home)): p.read_text(encoding="utf-8")
            for p in sorted(host_home.rglob("*"))
            if p.is_file()
        }
    if any(PROMPT in text for text in [*files.values(), *launch.env.values()]):
        raise ValueError(f"{harness.name} takes its prompt from a file: not a CLI to run by hand")
    return HandConfig(
        harness=harness.name,
        package=harness.package,
        dialects=tuple(dict.fromkeys(m.dialect for m in harness.modes)),
        base_url=ctx.endpoint.base_url,
        home=home,
        files=files,
        env=dict(launch.env),
        argv=list(launch.argv),
        cwd=launch.cwd,
        executable=harness.executable(ctx),
        installed=harness.is_installed(cache_root),
        command=harness.command,
    )


def _path_value(value: str) -> str:
    """A PATH value for the script: its `PROGRAMS_DIR` entry becomes the user's `$PATH`."""
    parts = value.split(os.pathsep)
    return ":".join('"$PATH"' if p == PROGRAMS_DIR else shlex.quote(p) for p in parts)


def _word(arg: str, executable: str) -> str:
    if arg == PROMPT:
        return '"$PROMPT"'
    return '"$CLI"' if arg == executable else shlex.quote(arg)


def render_script(config: HandConfig) -> str:
    """`config` as a bash script: `bash script.sh "PROMPT"` (module docstring)."""
    where = "installed" if config.installed else f"after `harnessrl harness install {config.harness}`"
    lines = [
        "#!/usr/bin/env bash",
        f"# {config.harness} ({config.package}) against `harnessrl serve` at {config.base_url}, configured",
        "# as harnessrl configures it in every rollout (the adapter's own launch).",
        f"# API: {config.dialects[0]} (its default mode). Usage: bash THIS_FILE 'your prompt'",
        f"# The pinned CLI ({where}) is {config.executable};",
        f"# HARNESSRL_CLI=$(command -v {config.command}) runs your own instead.",
        "set -euo pipefail",
        'PROMPT="${1:?usage: bash $0 PROMPT}"',
        f"CLI=${{HARNESSRL_CLI:-{shlex.quote(config.executable)}}}",
        f"export HOME={shlex.quote(str(config.home))}",
    ]
    for rel, text in config.files.items():
        path = config.home / rel
        if EOF_MARK in text.splitlines():
            raise ValueError(f"{rel} holds the line {EOF_MARK}")
        lines.append(f"mkdir -p {shlex.quote(str(path.parent))}")
        lines.append(f"cat > {shlex.quote(str(path))} <<'{EOF_MARK}'")
        lines += [text.rstrip("\n"), EOF_MARK]  # a heredoc ends the file with one newline
    for name, value in config.env.items():
        if name == "PATH" and value == PROGRAMS_DIR:
            continue  # the user's own PATH
        shown = _path_value(value) if name == "PATH" else shlex.quote(value)
        lines.append(f"export {name}={shown}")
    lines.append(f"cd {shlex.quote(config.cwd)}")
    lines.append(" ".join(_word(a, config.executable) for a in config.argv))
    return "\n".join(lines) + "\n"
