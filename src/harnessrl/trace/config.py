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
