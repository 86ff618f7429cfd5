"""The base of every config section (each package keeps its sections in its own `config.py`) and
the error a bad configuration raises, wherever it is found (`harnessrl.config` re-exports both)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Section(BaseModel):
    """Base for config sections: unknown keys are errors (a typo must not be silently ignored)."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class ConfigError(ValueError):
    """A config file, override or combination of settings is invalid; the message names the key and
    the problem."""
