"""`CheckResult`: what one run of a task's code checker (or its Harbor verifier) gave."""

from __future__ import annotations

from pydantic import BaseModel, Field


class CheckResult(BaseModel):
    """One checker run. `error` is None exactly when the checker produced a valid metrics dict."""

    score: float
    """Equal-weight mean of `metrics` (a Harbor verifier: its `reward` metric where it wrote one);
    0.0 on any failure."""
    metrics: dict[str, float] = Field(default_factory=dict)
    """The checker's per-metric values (empty on failure)."""
    error: str | None = None
    """Why the run scored 0.0 (raised, timed out, garbage output, ...)."""
    mode: str = ""
    """How the entry was driven: grade | main | script | shell | harbor ("" if it never started)."""
    stdout_tail: str = ""
    stderr_tail: str = ""
    duration_s: float = 0.0
    timed_out: bool = False
    children_confined: bool | None = None
    """Whether programs the checker started could not read its files (Landlock, sandboxed runs);
    None when the driver did not say (it never reported)."""
    dropped: list[str] = Field(default_factory=list)
    """A Harbor verifier on an image: files of the agent's writable layer left out of the verifier's
    copy (`verify/harbor_roots.py`'s rule), the first 50."""
    dropped_count: int = 0
    """How many files of the agent's layer were left out."""
