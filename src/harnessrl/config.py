"""Configuration: pydantic v2 models, loaded from TOML, overridden with dotted keys, merged here only.

Each section class lives next to the package it configures (`<package>/config.py`), and so does the
bundle of sections each package's entry points read (`rollout.config.RolloutSections`,
`train.config.TrainSections`, `evaluate.config.EvalSections`, `experiments.config.RunSections` and one
per experiment); this module assembles them into `Config` and re-exports them. It sits in the top
layer with the commands (`harnessrl.commands`): no library module imports it, and the library takes
its bundle of sections, which `Config` is an instance of.

    cfg = load_config("run.toml", overrides=["train.lr=1e-6", "rollout.n=8"])
    cfg = load_config(shipped_config("quickstart.toml"))   # a configuration shipped with the package

Override values are parsed as TOML literals (`1e-6`, `true`, `"text"`, `[1, 2]`); anything that does
not parse as a literal is taken as a bare string (`-o engine.model=/ckpt/step10`). Configs build
runtime objects; runtime objects never read global config.
"""

from __future__ import annotations

import json
import tomllib
from importlib.resources import files
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from harnessrl.config_section import ConfigError, Section
from harnessrl.engines.config import EngineConfig, SamplingConfig, VLLMConfig
from harnessrl.evaluate.config import EvalConfig, EvalSections
from harnessrl.experiments.config import (
    AblationConfig,
    AblationSections,
    QuickstartConfig,
    QuickstartSections,
    RunSections,
    TransferConfig,
    TransferSections,
)
from harnessrl.proxy.config import ProxyConfig
from harnessrl.report.config import TrackingConfig
from harnessrl.rl.config import AdvantageConfig, LossConfig
from harnessrl.rollout.config import RayConfig, RolloutConfig, RolloutSections
from harnessrl.sandbox.config import SandboxConfig
from harnessrl.scaling.config import HarnessSpaceConfig
from harnessrl.tasks.config import TasksConfig
from harnessrl.trace.config import TraceConfig
from harnessrl.train.config import (
    TRAINABLE_STATUSES,
    FailurePolicyConfig,
    LoraSettings,
    SftConfig,
    TrainableStatus,
    TrainConfig,
    TrainerConfig,
    TrainSections,
)
from harnessrl.verify.config import JudgeConfig, VerifyConfig

__all__ = [
    "TRAINABLE_STATUSES",
    "AblationConfig",
    "AblationSections",
    "AdvantageConfig",
    "Config",
    "ConfigError",
    "EngineConfig",
    "EvalConfig",
    "EvalSections",
    "FailurePolicyConfig",
    "HarnessSpaceConfig",
    "JudgeConfig",
    "LoraSettings",
    "LossConfig",
    "ProxyConfig",
    "QuickstartConfig",
    "QuickstartSections",
    "RayConfig",
    "RolloutConfig",
    "RolloutSections",
    "RunSections",
    "SamplingConfig",
    "SandboxConfig",
    "Section",
    "SftConfig",
    "TasksConfig",
    "TraceConfig",
    "TrackingConfig",
    "TrainConfig",
    "TrainSections",
    "TrainableStatus",
    "TrainerConfig",
    "TransferConfig",
    "TransferSections",
    "VLLMConfig",
    "VerifyConfig",
    "flag_overrides",
    "load_config",
    "merge_overrides",
    "parse_override",
    "shipped_config",
]


class Config(QuickstartSections, AblationSections, TransferSections):
    """The whole run configuration: every section once, as the union of the libraries' bundles, so a
    `Config` can be given to any library entry point (which reads only its bundle's sections)."""


SHIPPED = "configs"
"""The package-data folder of the configurations shipped with harnessrl (`harnessrl/configs/`; a
checkout's top-level `configs/` links to it): installed with the wheel, found by `shipped_config`."""


def shipped_config(name: str) -> Path:
    """The shipped configuration `name` (`quickstart.toml`, `scaling/ablation.toml`), found through
    `importlib.resources`, so it resolves the same in a checkout and in an installed wheel. ConfigError
    when there is no such file (or the package is not installed as files, e.g. from a zip)."""
    resource = files("harnessrl").joinpath(SHIPPED, *name.split("/"))
    if not isinstance(resource, Path) or not resource.is_file():
        raise ConfigError(f"no configuration {name!r} shipped with harnessrl (looked in {resource})")
    return resource


def parse_override(text: str) -> tuple[list[str], Any]:
    """`a.b.c=value` -> (["a", "b", "c"], parsed value)."""
    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise ConfigError(f"override {text!r} must look like section.key=value")
    parts = key.split(".")
    if any(not p for p in parts):
        raise ConfigError(f"override {text!r}: empty key segment in {key!r}")
    raw = raw.strip()
    try:
        value = tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw
    return parts, value


def merge_overrides(data: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    """Apply dotted overrides to a nested dict (in place) and return it."""
    for text in overrides:
        parts, value = parse_override(text)
        node = data
        for p in parts[:-1]:
            child = node.setdefault(p, {})
            if not isinstance(child, dict):
                raise ConfigError(f"override {text!r}: {p!r} is a value, not a section")
            node = child
        node[parts[-1]] = value
    return data


def flag_overrides(flags: dict[str, Any]) -> list[str]:
    """CLI flags `{"rollout.n": 4, "engine.model": "/ckpt"}` as dotted overrides; None means unset.

    Values are written as JSON, which is valid TOML for strings, numbers and booleans.
    """
    return [f"{k}={json.dumps(v)}" for k, v in flags.items() if v is not None]


def _format_validation(err: ValidationError, origin: str) -> str:
    lines = [f"invalid configuration ({origin}):"]
    for e in err.errors():
        loc = ".".join(str(x) for x in e["loc"]) or "<root>"
        got = e.get("input")
        got_s = "" if isinstance(got, dict) else f" (got {got!r})"
        lines.append(f"  {loc}: {e['msg']}{got_s}")
    return "\n".join(lines)


def load_config(path: str | Path | None = None, overrides: list[str] | None = None) -> Config:
    """Load a TOML file (optional), apply dotted overrides, validate. Raises ConfigError."""
    data: dict[str, Any] = {}
    origin = "defaults"
    if path is not None:
        p = Path(path)
        origin = str(p)
        try:
            data = tomllib.loads(p.read_text(encoding="utf-8"))
        except FileNotFoundError as e:
            raise ConfigError(f"config file not found: {p}") from e
        except tomllib.TOMLDecodeError as e:
            raise ConfigError(f"{p}: not valid TOML: {e}") from e
    if overrides:
        merge_overrides(data, overrides)
        origin += " + overrides"
    try:
        return Config.model_validate(data)
    except ValidationError as e:
        raise ConfigError(_format_validation(e, origin)) from None
