"""Config sections of `trace/`: the prefix-tree filters.

Assembled into `harnessrl.config.Config`, which re-exports them. A section module imports only
pydantic, `Section` and other section modules, so `harnessrl.config` never imports what they configure.
"""

from __future__ import annotations

from harnessrl.config_section import Section


class TraceConfig(Section):
    """How a rollout's model calls become trained trajectories (see `harnessrl.trace`)."""

    max_live_leaves: int = 32
    """A rollout with more kept live leaves than this is dropped whole (filtered:over_branching)."""
    keep_compaction: bool = False
    """Keep summary requests and the main thread after a compaction restart as their own trajectories."""
    keep_subagents: bool = False
    """Keep sub-agent calls (other system prompt / tool set / model) as their own trajectories."""

    def for_segments(self, segments: str) -> TraceConfig:
        """The filters for `train.segments`: unchanged for `exclude`, every segment kept otherwise."""
        if segments == "exclude":
            return self
        return self.model_copy(update={"keep_compaction": True, "keep_subagents": True})
