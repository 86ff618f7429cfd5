"""Config sections of `trace/`: the prefix-tree filters.

Assembled into `harnessrl.config.Config`, which re-exports them. A section module imports only
pydantic, `Section` and other section modules, so `harnessrl.config` never imports what they configure.
"""

from __future__ import annotations

from pydantic import Field

from harnessrl.config_section import Section


class TraceConfig(Section):
    """How a rollout's model calls become trained trajectories (see `harnessrl.trace`)."""

    max_live_leaves: int = Field(default=32, ge=1)
    """At most this many kept (live) leaves per rollout tree, which bounds its packed size: past it,
    the calls that would add a leaf are dropped (`over_branching`), the latest main-thread call's path
    always kept, and the rollout is still trained with its reward (never dropped whole)."""
    keep_compaction: bool = False
    """Keep summary requests and the main thread after a compaction restart as their own trajectories
    (SFT, `harnessrl tree`; RL follows `train.segments`)."""
    keep_subagents: bool = False
    """Keep sub-agent calls (other system prompt / tool set / model) as their own trajectories (SFT,
    `harnessrl tree`; RL follows `train.segments`)."""

    def for_segments(self, segments: str) -> TraceConfig:
        """The filters RL trains with under `train.segments`: no compaction or sub-agent call for
        `exclude`, all of them otherwise (`keep_compaction` / `keep_subagents` are for SFT and
        `harnessrl tree`)."""
        keep = segments != "exclude"
        return self.model_copy(update={"keep_compaction": keep, "keep_subagents": keep})
