"""The first prompt of each harness keeps its tools within a run, or the run stops and says what changed.

A harness builds its prompt from what it finds on the machine: Hermes adds 10 `browser_*` tools when
a `chromium` is on PATH. `sandbox/programs.py` makes what the sandbox shows the same everywhere; this
check catches what still differs. Each rollout's first main-thread call (`first_prompt`: the main
thread as `trace.classify` finds it, so a side call made first does not count) is written to
`<rollout>/prompt.json` (`formats/first_prompt.py`), and every backend's `run_many` hands its
rollouts to the run's `PromptCheck`: the first rollout of a harness that made a call fixes that
harness's tool set for the run. A later one that adds or removes a tool raises `PromptChanged` (an
error: the run stops) naming the harness, the two rollouts, the tools added and removed, and whether
the system prompt and the tools' text changed too. A system prompt or tools' text that changed with
the same tool names is logged as a warning, once per harness and prompt: harnesses put things there
that legitimately change within a run on one machine (the date: Claude Code, pi, OpenClaw,
Continue; the workspace's own files: OpenClaw's AGENTS.md and SOUL.md; the working folder),
so an error there would stop a run at midnight. Rollouts that made no call are not compared.

    check = PromptCheck()
    check.observe(rollouts)      # PromptChanged after a batch whose tool sets differ from the first
"""

from __future__ import annotations

import logging

from harnessrl.formats.first_prompt import FirstPrompt
from harnessrl.trace.classify import choose_main_group, group_key
from harnessrl.types import HarnessError, Rollout

log = logging.getLogger(__name__)


class PromptChanged(HarnessError):
    """A harness sent another first prompt (tools or system prompt) than earlier in the same run."""


def first_prompt(rollout: Rollout) -> FirstPrompt | None:
    """The first main-thread call of `rollout` as a FirstPrompt; None when it made no call."""
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
        self.first: dict[str, tuple[str, FirstPrompt]] = {}
        """harness -> (the rollout that fixed it, its first prompt)."""
        self.warned: set[tuple[str, str, str]] = set()
        """(harness, system digest, tools digest) of the changed prompts already logged."""

    def observe(self, rollouts: list[Rollout]) -> list[Rollout]:
        """Compare each rollout's first prompt with its harness's in this run; PromptChanged, naming
        every harness whose tool set changed, once all of `rollouts` are seen; else `rollouts`."""
        problems: list[str] = []
        for rollout in rollouts:
            prompt = first_prompt(rollout)
            if prompt is None:
                continue
            seen = self.first.setdefault(rollout.harness, (rollout.rollout_id, prompt))
            said = differences(seen[1], prompt)
            if not said:
                continue
            where = f"rollout {rollout.rollout_id} against {seen[0]}"
            line = f"harness {rollout.harness}: first prompt changed ({where}): {'; '.join(said)}"
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
