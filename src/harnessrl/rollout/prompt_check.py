"""The first prompt of each harness keeps its tools within a run, or the run stops and says what changed.

A harness builds its prompt from what it finds on the machine: Hermes adds 10 `browser_*` tools when a
`chromium` is on PATH. `sandbox/programs.py` makes what the sandbox shows the same everywhere; this
check catches what still differs. Each rollout's first agent call (`first_prompt`: its first call that
offers tools, so a tool-less side call made first does not count) is written to
`<rollout>/prompt.json` (`formats/first_prompt.py`), and every backend's `run_many` hands its rollouts
to the run's `PromptCheck`, with the system each ran on (`system_of`: its task's image, or the host's
root): the first rollout of a harness that made a call on a system fixes that harness's tool set on that
system for the run. Tasks on different images legitimately show a harness different programs (a Harbor
image with chromium in it), so each (harness, system) is compared on its own. A later one that adds or
removes a tool raises `PromptChanged` (an error: the run stops) naming the harness, the two rollouts,
the tools added and removed, and whether the system prompt and the tools' text changed too. A system
prompt or tools' text that changed with the same tool names is logged as a warning, once per harness and
prompt: harnesses put things there that legitimately change within a run on one machine (the date:
Claude Code, pi, OpenClaw, Continue; the workspace's own files: OpenClaw's AGENTS.md and SOUL.md; the
working folder), so an error there would stop a run at midnight. Rollouts that made no call are not
compared.

    check = PromptCheck()
    check.observe(rollouts, [system_of(j.task) for j in jobs])  # PromptChanged: tool sets differ
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from harnessrl.formats.first_prompt import FirstPrompt
from harnessrl.images.spec import image_of
from harnessrl.trace.classify import choose_main_group, group_key
from harnessrl.types import HarnessError, Rollout, Task

HOST = "host"
"""The system of a task that runs on the host's root (no image)."""

log = logging.getLogger(__name__)


class PromptChanged(HarnessError):
    """A harness sent another first prompt (tools or system prompt) than earlier in the same run."""


def system_of(task: Task) -> str:
    """The system `task` runs on, as the check keys it: its image's label, or `HOST`."""
    spec = image_of(task)
    return HOST if spec is None else f"image {spec.label}"


def first_prompt(rollout: Rollout) -> FirstPrompt | None:
    """The first main-thread call of `rollout` as a FirstPrompt (`trace.classify.choose_main_group`:
    the group of its first call that offers tools, so what the policy did afterwards never decides
    which call it is); None when it made no call."""
    calls = rollout.calls
    if not calls:
        return None
    main = choose_main_group(calls)
    call = next((c for c in calls if group_key(c) == main), calls[0])
    return FirstPrompt(
        harness=rollout.harness,
        call_index=call.index,
        system_digest=call.system_digest,
        tools_digest=call.tools_digest,
        tools=list(call.tool_names),
        prompt_tokens=len(call.prompt_ids),
    )


def differences(before: FirstPrompt, now: FirstPrompt) -> list[str]:
    """What changed from `before` to `now`, in words (empty: the same prompt)."""
    said: list[str] = []
    added = [t for t in now.tools if t not in before.tools]
    removed = [t for t in before.tools if t not in now.tools]
    if added:
        said.append(f"tools added: {', '.join(added)}")
    if removed:
        said.append(f"tools removed: {', '.join(removed)}")
    if before.tools_digest != now.tools_digest and not added and not removed:
        said.append("the tools' descriptions, schemas or order changed")
    if before.system_digest != now.system_digest:
        said.append("the system prompt changed")
    return said


class PromptCheck:
    """The first prompt of each harness in one run (module docstring)."""

    def __init__(self) -> None:
        self.first: dict[tuple[str, str], tuple[str, FirstPrompt]] = {}
        """(harness, system) -> (the rollout that fixed it, its first prompt)."""
        self.warned: set[tuple[str, str, str]] = set()
        """(harness, system digest, tools digest) of the changed prompts already logged."""

    def observe(self, rollouts: list[Rollout], systems: Sequence[str] | None = None) -> list[Rollout]:
        """Compare each rollout's first prompt with its harness's on the same system in this run
        (`systems[i]`: where `rollouts[i]` ran, `system_of`; None: all on the host); PromptChanged,
        naming every harness whose tool set changed, once all of `rollouts` are seen; else `rollouts`."""
        problems: list[str] = []
        for i, rollout in enumerate(rollouts):
            prompt = first_prompt(rollout)
            if prompt is None:
                continue
            system = HOST if systems is None else systems[i]
            seen = self.first.setdefault((rollout.harness, system), (rollout.rollout_id, prompt))
            said = differences(seen[1], prompt)
            if not said:
                continue
            where = f"rollout {rollout.rollout_id} against {seen[0]}"
            on = "" if system == HOST else f" on {system}"
            line = f"harness {rollout.harness}{on}: first prompt changed ({where}): {'; '.join(said)}"
            if set(prompt.tools) != set(seen[1].tools):
                problems.append(line)
            elif (key := (rollout.harness, prompt.system_digest, prompt.tools_digest)) not in self.warned:
                self.warned.add(key)
                log.warning("%s (the same tools: a date or the task's files, most likely)", line)
        if problems:
            raise PromptChanged(
                "\n".join(problems) + "\n(the sandbox should show every machine the same programs: "
                "sandbox/programs.py; compare <rollout>/prompt.json of the two rollouts)"
            )
        return rollouts
