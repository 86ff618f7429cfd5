"""The sandbox agent environment: a read-only python tree with what real tasks import.

Upstream ClawGym runs the agent in a container with `python` (not only `python3`), pytest, numpy,
pandas and other pip-installed packages, and scores in that same container. Here `scripts/agent_env`
(called by `scripts/setup`) builds `<cache>/agent-env`: a venv of the system `/usr/bin/python3`
with the pinned packages of `scripts/agent_env.txt`. When it exists (or `sandbox.agent_env` names
one), every agent sandbox binds it read-only at its own path and puts its `bin/` first on PATH of
every command (`SandboxSpec.path_prefix`), and the checker runs with its python
(`SandboxCommandRunner(agent_env=...)`), so what the agent can run is what is scored.

    env = resolve_agent_env("auto")     # Path, or None when not built ("off": always None)
"""

from __future__ import annotations

import logging
from pathlib import Path

from harnessrl.cache import cache_root

log = logging.getLogger(__name__)
_warned: set[str] = set()


def default_agent_env() -> Path:
    """Where `scripts/agent_env` builds it by default: `<cache root>/agent-env`."""
    return cache_root() / "agent-env"


def agent_env_python(env: Path) -> Path:
    return env / "bin" / "python"


STAMP = "requirements.txt"
"""Written last into a built tree by `scripts/agent_env`: the requirements it was built from."""


def built_from(env: Path, requirements: Path) -> bool:
    """True when the tree at `env` is complete and was built from the file `requirements` (what
    `scripts/agent_env` compares before it rebuilds)."""
    try:
        return agent_env_python(env).exists() and (env / STAMP).read_bytes() == requirements.read_bytes()
    except OSError:
        return False


def resolve_agent_env(setting: str) -> Path | None:
    """`sandbox.agent_env` -> the tree to bind, or None. `auto`: the default tree when it is built
    (else None, logged once: sandboxes then have only the system python3 and no `python`); `off`:
    None; anything else is a path that must hold a built tree (FileNotFoundError otherwise)."""
    if setting == "off":
        return None
    path = default_agent_env() if setting == "auto" else Path(setting)
    path = path.resolve()
    if agent_env_python(path).exists():
        return path
    if setting != "auto":
        raise FileNotFoundError(f"sandbox.agent_env {setting!r}: no {agent_env_python(path)}")
    if str(path) not in _warned:
        _warned.add(str(path))
        log.warning(
            "no sandbox agent environment at %s (run scripts/agent_env): agents get the system "
            "python3 only, without `python`, pytest or numpy",
            path,
        )
    return None
