"""Configuration: pydantic v2 models, loaded from TOML, overridden with dotted keys, merged here only.

Each section class lives next to the package it configures (`<package>/config.py`); this module
assembles them into `Config` and re-exports them.

    cfg = load_config("run.toml", overrides=["train.lr=1e-6", "rollout.n=8"])

Override values are parsed as TOML literals (`1e-6`, `true`, `"text"`, `[1, 2]`); anything that does
not parse as a literal is taken as a bare string (`-o engine.model=/ckpt/step10`). Configs build
runtime objects; runtime objects never read global config.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError

from harnessrl.config_section import Section
from harnessrl.engines.config import EngineConfig, SamplingConfig, VLLMConfig
from harnessrl.evaluate.config import EvalConfig
from harnessrl.experiments.config import AblationConfig, QuickstartConfig, TransferConfig
from harnessrl.proxy.config import ProxyConfig
from harnessrl.report.config import TrackingConfig
from harnessrl.rl.config import AdvantageConfig, LossConfig
from harnessrl.rollout.config import RayConfig, RolloutConfig
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
)
from harnessrl.verify.config import JudgeConfig, VerifyConfig

__all__ = [
    "TRAINABLE_STATUSES",
    "AblationConfig",
    "AdvantageConfig",
    "Config",
    "ConfigError",
    "EngineConfig",
    "EvalConfig",
    "FailurePolicyConfig",
    "HarnessSpaceConfig",
    "JudgeConfig",
    "LoraSettings",
    "LossConfig",
    "ProxyConfig",
    "QuickstartConfig",
    "RayConfig",
    "RolloutConfig",
    "SamplingConfig",
    "SandboxConfig",
    "Section",
    "SftConfig",
    "TasksConfig",
    "TraceConfig",
    "TrackingConfig",
    "TrainConfig",
    "TrainableStatus",
    "TrainerConfig",
    "TransferConfig",
    "VLLMConfig",
    "VerifyConfig",
    "flag_overrides",
    "load_config",
    "merge_overrides",
    "parse_override",
]


class Config(Section):
    """The whole run configuration."""

    tasks: TasksConfig = Field(default_factory=TasksConfig)
    """The task set."""
    verify: VerifyConfig = Field(default_factory=VerifyConfig)
    """Scoring: code checkers, the rubric judge, hybrid weights."""
    engine: EngineConfig = Field(default_factory=EngineConfig)
    """The policy's inference engine."""
    proxy: ProxyConfig = Field(default_factory=ProxyConfig)
    """The model-API proxy the harnesses call."""
    sandbox: SandboxConfig = Field(default_factory=SandboxConfig)
    """The sandboxes of rollouts and checkers."""
    rollout: RolloutConfig = Field(default_factory=RolloutConfig)
    """How rollouts run: harness, concurrency, timeout, backend."""
    train: TrainConfig = Field(default_factory=TrainConfig)
    """The RL loop (`harnessrl train`) and its trainer."""
    trace: TraceConfig = Field(default_factory=TraceConfig)
    """Prefix-tree filters."""
    eval: EvalConfig = Field(default_factory=EvalConfig)
    """`harnessrl eval`."""
    sft: SftConfig = Field(default_factory=SftConfig)
    """Cold-start SFT (`harnessrl sft`)."""
    quickstart: QuickstartConfig = Field(default_factory=QuickstartConfig)
    """`harnessrl quickstart`."""
    ablation: AblationConfig = Field(default_factory=AblationConfig)
    """The harness-scaling ablation (`scripts/scaling_ablation`)."""
    transfer: TransferConfig = Field(default_factory=TransferConfig)
    """The harness-transfer experiment (`scripts/harness_transfer`)."""
    tracking: TrackingConfig = Field(default_factory=TrackingConfig)
    """Experiment trackers besides TensorBoard (`report.trackers`)."""


class ConfigError(ValueError):
    """A config file or override is invalid; the message names the key and the problem."""


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
