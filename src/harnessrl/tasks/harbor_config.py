"""Harbor's `task.toml`, read strictly: every field Harbor knows, with Harbor's defaults, and nothing else.

Mirrors the pydantic models of the `harbor` package (`harbor/models/task/config.py`, schema 1.4; read
from its source, 2026: `TaskConfig`, `AgentConfig`, `VerifierConfig`, `EnvironmentConfig`,
`SolutionConfig`, `PackageInfo`), including the deprecated spellings Harbor still accepts (`version`
for `schema_version`, `memory` / `storage` as "2G" / "512M", `allow_internet`). Harbor ignores keys it
does not know; here an unknown key is an error naming it (`extra="forbid"`), and so is every field
harnessrl cannot honour (`unsupported`): GPUs and TPUs, an internet allow-list, MCP servers, skills,
healthchecks, a separate verifier image, continuous verification, collect hooks, multi-step tasks,
non-Linux images, and environment values that read host variables (`${VAR}`). A task that asks for any
of them is rejected, never run in part.
"""

from __future__ import annotations

import math
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

NetworkMode = Literal["public", "no-network", "allowlist"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Author(_Strict):
    name: str
    email: str | None = None


class PackageInfo(_Strict):
    """`[task]`: the task's name in Harbor's registry (`org/name`) and its description."""

    name: str
    version: str | None = None
    description: str = ""
    authors: list[Author] = Field(default_factory=list)
    keywords: list[str] = Field(default_factory=list)


class AgentSection(_Strict):
    timeout_sec: float | None = None
    user: str | int | None = None
    network_mode: NetworkMode | None = None
    allowed_hosts: list[str] | None = None


class VerifierSection(_Strict):
    timeout_sec: float = 600.0
    env: dict[str, str] = Field(default_factory=dict)
    user: str | int | None = None
    network_mode: NetworkMode | None = None
    allowed_hosts: list[str] | None = None
    environment_mode: Literal["shared", "separate"] | None = None
    environment: dict[str, Any] | None = None
    continuous: dict[str, Any] | None = None
    collect: list[dict[str, Any]] = Field(default_factory=list)


class EnvironmentSection(_Strict):
    build_timeout_sec: float = 600.0
    docker_image: str | None = None
    os: str = "linux"
    cpus: int | None = None
    memory_mb: int | None = None
    storage_mb: int | None = None
    memory: str | None = None
    storage: str | None = None
    gpus: int | None = None
    gpu_types: list[str] | None = None
    tpu: dict[str, Any] | None = None
    mcp_servers: list[dict[str, Any]] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    skills_dir: str | None = None
    healthcheck: dict[str, Any] | None = None
    workdir: str | None = None
    allow_internet: bool | None = None
    network_mode: NetworkMode | None = None
    allowed_hosts: list[str] | None = None


class SolutionSection(_Strict):
    env: dict[str, str] = Field(default_factory=dict)


class TaskToml(_Strict):
    """One `task.toml`."""

    schema_version: str = "1.4"
    version: str | None = None
    """Deprecated spelling of `schema_version`."""
    task: PackageInfo | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    verifier: VerifierSection = Field(default_factory=VerifierSection)
    agent: AgentSection = Field(default_factory=AgentSection)
    environment: EnvironmentSection = Field(default_factory=EnvironmentSection)
    solution: SolutionSection = Field(default_factory=SolutionSection)
    source: str | None = None
    multi_step_reward_strategy: str | None = None
    steps: list[dict[str, Any]] | None = None
    artifacts: list[Any] = Field(default_factory=list)


def size_mb(text: str) -> int:
    """Harbor's `_parse_size_to_mb`: "2G" -> 2048, "512M" -> 512, "1024K" -> 1; ValueError otherwise."""
    value = text.strip().upper()
    units = {"G": 1024.0, "M": 1.0, "K": 1 / 1024}
    if not value or value[-1] not in units:
        raise ValueError(f"size {text!r} is not like '2G', '512M' or '1024K'")
    number = float(value[:-1])
    if not math.isfinite(number) or number < 0:
        raise ValueError(f"size {text!r} is not a non-negative number")
    return int(number * units[value[-1]])


def resolved_size(size: str | None, mb: int | None, name: str) -> tuple[int | None, tuple[str, str] | None]:
    """`memory_mb` from `memory_mb` and/or the deprecated `memory` ("2G"): (MiB, None) or (None, problem)."""
    if size is None:
        return mb, None
    try:
        from_size = size_mb(size)
    except ValueError as e:
        return None, (f"environment.{name}", str(e))
    if mb is not None and mb != from_size:
        why = f"{name} = {size!r} ({from_size} MB) conflicts with {name}_mb = {mb}"
        return None, (f"environment.{name}", why)
    return from_size, None


_TEMPLATE = re.compile(r"\$\{")  # Harbor resolves `${VAR}` and `${VAR:-default}` from the host


def _network(mode: NetworkMode | None, hosts: list[str] | None, where: str) -> list[tuple[str, str]]:
    if mode == "allowlist" or hosts:
        return [
            (f"{where}.allowed_hosts", "an internet allow-list is not supported (sandboxes have no network)")
        ]
    return []


def _templated(env: dict[str, str], where: str) -> list[tuple[str, str]]:
    return [
        (f"{where}.{key}", f"{value!r} reads a host variable; harnessrl passes none into sandboxes")
        for key, value in env.items()
        if _TEMPLATE.search(value)
    ]


def _environment_problems(env: EnvironmentSection) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    if env.os.lower() != "linux":
        found.append(("environment.os", f"{env.os!r}: only Linux images are supported"))
    if env.gpus:
        found.append(("environment.gpus", f"{env.gpus} GPU(s) asked for: sandboxes have none"))
    for name in ("gpu_types", "tpu", "skills_dir", "healthcheck"):
        if getattr(env, name) is not None:
            found.append((f"environment.{name}", "is not supported"))
    if env.mcp_servers:
        found.append(("environment.mcp_servers", "MCP servers of a task are not supported"))
    if env.workdir is not None and (not env.workdir.startswith("/") or ".." in env.workdir.split("/")):
        found.append(("environment.workdir", f"{env.workdir!r} is not an absolute path"))
    for size, mb, name in ((env.memory, env.memory_mb, "memory"), (env.storage, env.storage_mb, "storage")):
        problem = resolved_size(size, mb, name)[1]
        found += [problem] if problem is not None else []
    return (
        found
        + _network(env.network_mode, env.allowed_hosts, "environment")
        + _templated(env.env, "environment.env")
    )


def _verifier_problems(ver: VerifierSection) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    if ver.environment is not None or ver.environment_mode == "separate":
        found.append(("verifier.environment", "a verifier image of its own is not supported"))
    if ver.continuous and ver.continuous.get("enabled"):
        found.append(("verifier.continuous", "continuous verification is not supported"))
    if ver.collect:
        found.append(("verifier.collect", "collect hooks (compose services) are not supported"))
    return (
        found
        + _network(ver.network_mode, ver.allowed_hosts, "verifier")
        + _templated(ver.env, "verifier.env")
    )


def unsupported(cfg: TaskToml) -> list[tuple[str, str]]:
    """(field, why) for every value of `cfg` that harnessrl cannot honour; [] when it can run the task."""
    found = _environment_problems(cfg.environment) + _verifier_problems(cfg.verifier)
    found += _network(cfg.agent.network_mode, cfg.agent.allowed_hosts, "agent")
    found += _templated(cfg.solution.env, "solution.env")
    if cfg.steps is not None or cfg.multi_step_reward_strategy is not None:
        found.append(("steps", "multi-step tasks are not supported"))
    for name, value in (
        ("agent.timeout_sec", cfg.agent.timeout_sec),
        ("verifier.timeout_sec", cfg.verifier.timeout_sec),
    ):
        if value is not None and not (math.isfinite(value) and value > 0):
            found.append((name, f"{value!r} is not a positive number of seconds"))
    return found


def agent_internet(cfg: TaskToml) -> bool:
    """The agent phase's network is public: `[agent] network_mode`, else the environment's baseline as
    the task states it (`network_mode`, else `allow_internet`). Unset is offline (Harbor's own default
    is public; harnessrl gives no task the internet it did not ask for)."""
    return _phase_public(cfg.agent.network_mode, cfg.environment)


def verifier_internet(cfg: TaskToml) -> bool:
    """The verifier phase's network is public (`[verifier] network_mode`, else the baseline)."""
    return _phase_public(cfg.verifier.network_mode, cfg.environment)


def _phase_public(mode: NetworkMode | None, env: EnvironmentSection) -> bool:
    if mode is not None:
        return mode == "public"
    if env.network_mode is not None:
        return env.network_mode == "public"
    return bool(env.allow_internet)
