"""A scripted engine that drives ANY whitebox configuration through a task's reference commands.

    engine = ReferenceEngine(fmt, [(task.prompt, [reference_command(task)])])

The scripted engine replays fixed turns; a whitebox configuration decides at run time whether the
model must emit a `bash` call, a `run` call or a fenced block, and adds plan, verify and summary
calls. This engine reads each prompt (decoded, stateless, so retries and concurrent sessions replay
correctly) and answers in the format the request implies:

- the tool interface from the tools rendered into the prompt (`bash` / `run` / none: a fenced block);
- the last non-assistant messages: a compaction request gets a summary, a plan request a plan, a
  verification request a check command;
- with the `delegate` tool offered (`subagents`), the first reference command goes to a sub-agent
  (`delegate` with "Run this command ...: echo ref-step-1; <command>"); the sub-agent, told by its
  helper system prompt, runs that command and then reports;
- otherwise the next reference command: command i is sent as `echo ref-step-i; <command>`, so the
  highest `ref-step-i` in the prompt (in a kept turn, its output, or a summary) says how far it got;
  after the last one, the final answer. A turn that only ever follows the last command (the final
  answer, the verification command) says all were sent: a sliding window drops the last command's
  own turn once two more came after it, and the engine used to send command 1 again (a line appended
  twice under `whitebox:12012`). Each reference command runs exactly once in every configuration.

Outputs are exact ids through `ChatFormat.render_assistant`; log-probs are real with a `scorer`
(`(prompt_ids, output_ids) -> log-probs`), else zeros, as in `engines.scripted`.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from typing import Any

from harnessrl.chat.format import ChatFormat
from harnessrl.engines.scripted import Scorer, cut_output
from harnessrl.harnesses.adapter import TEXT_SHELL, ShellTool
from harnessrl.harnesses.whitebox.agent import context, prompts, tools, workflow
from harnessrl.protocols import GenerationResult, SamplingParams
from harnessrl.types import ChatMessage, EngineError, ToolCall

STEP = re.compile(r"ref-step-(\d+)")
VERIFY_COMMAND = "echo ref-verify; ls -la"
SHELLS = dict(tools.SHELL_TOOLS.values())
"""Shell tool name -> its command argument, over every tool level."""
TOOL = re.compile(r'"name":\s*"(' + "|".join(SHELLS) + ')"')
MARK = "<|im_start|>"
DELEGATE = re.compile(r'"name":\s*"' + tools.DELEGATE + '"')
DELEGATE_TASK = "Run this command and report what it printed: "
HELPER = prompts.HELPER.split("\n", 1)[0][:40]
"""Marks a `delegate` sub-agent's system prompt."""


def _segments(text: str) -> tuple[str, str]:
    """(system segment, the non-assistant messages after the last assistant turn) of a ChatML prompt."""
    parts = text.split(MARK)[1:]
    body = parts[:-1]  # the last part is the generation prompt
    last = max((i for i, p in enumerate(body) if p.startswith("assistant")), default=-1)
    system = body[0] if body and body[0].startswith("system") else ""
    return system, MARK.join(body[last + 1 :])


def _helper_turn(text: str, system: str) -> ChatMessage:
    """A `delegate` sub-agent: run the command its task names, then report."""
    if f"{MARK}assistant" in text.rsplit(MARK, 1)[0]:
        return _text("Report: I ran the command; its output is above.")
    task = text.split(DELEGATE_TASK, 1)[-1].split("<|im_end|>", 1)[0]
    return _action(system, task.strip())


def reference_turn(text: str, commands: Sequence[str], final: str = "done") -> ChatMessage:
    """The assistant turn answering a decoded prompt (module docstring)."""
    system, tail = _segments(text)
    if HELPER in system:
        return _helper_turn(text, system)
    done = _sent(text, len(commands), final)
    if context.COMPACT_PROMPT[:30] in tail:
        return _text(f"Summary: working on the task; finished ref-step-{done} of {len(commands)}.")
    if workflow.PLAN_PROMPT[:30] in tail:
        return _text("1. Run the reference commands in order.\n2. Check the result.\n3. Answer.")
    if workflow.VERIFY_PROMPT[:30] in tail:
        return _action(system, VERIFY_COMMAND)
    if done == 0 and commands and DELEGATE.search(system):
        task = {"task": f"{DELEGATE_TASK}echo ref-step-1; {commands[0]}"}
        return ChatMessage(role="assistant", tool_calls=[ToolCall(name=tools.DELEGATE, arguments=task)])
    if done < len(commands):
        return _action(system, f"echo ref-step-{done + 1}; {commands[done]}")
    return _text(final)


def _sent(text: str, n: int, final: str) -> int:
    """How many of the `n` reference commands the run has sent (module docstring)."""
    answered = VERIFY_COMMAND in text or any(_content(p) == final for p in text.split(MARK))
    return n if answered else max((int(i) for i in STEP.findall(text)), default=0)


def _content(part: str) -> str | None:
    """The text of an assistant turn of a ChatML prompt (an empty think block dropped), else None."""
    if not part.startswith("assistant\n"):
        return None
    body = part.removeprefix("assistant\n").split("<|im_end|>")[0]
    return re.sub(r"^<think>\s*</think>\s*", "", body).strip()


def _text(text: str) -> ChatMessage:
    return ChatMessage(role="assistant", content=text)


def _action(system: str, command: str) -> ChatMessage:
    """`command` through the shell tool the rendered tools offer; a fenced block when there is none."""
    tool = TOOL.search(system)
    shell = TEXT_SHELL if tool is None else ShellTool(tool.group(1), SHELLS[tool.group(1)])
    return shell.turn(command)


class ReferenceEngine:
    """An Engine over `reference_turn`; scripts are (substring of the prompt selecting it, commands)."""

    def __init__(
        self,
        fmt: ChatFormat,
        scripts: Sequence[tuple[str | None, Sequence[str]]],
        *,
        scorer: Scorer | None = None,
    ) -> None:
        self.fmt = fmt
        self.scripts = [(m, list(c)) for m, c in scripts]
        self.scorer = scorer
        self.calls = 0

    @property
    def tokenizer(self) -> Any:
        return self.fmt.tokenizer

    async def generate(self, prompt_ids: list[int], sampling: SamplingParams) -> GenerationResult:
        self.calls += 1
        text = str(self.fmt.tokenizer.decode(prompt_ids, skip_special_tokens=False))
        found = [c for m, c in self.scripts if m is None or m in text]
        if not found and HELPER not in text:  # a sub-agent's prompt holds only its own task
            raise EngineError("no reference script matches this prompt")
        turn = reference_turn(text, found[0] if found else [])
        output_ids, finish = cut_output(self.fmt.render_assistant(turn), sampling)
        logprobs = [0.0] * len(output_ids)
        if self.scorer is not None:
            logprobs = [float(x) for x in await asyncio.to_thread(self.scorer, prompt_ids, output_ids)]
        return GenerationResult(output_ids, logprobs, finish, {"call": self.calls - 1})

    async def update_weights(self, state_dict: dict[str, Any]) -> None:
        return None

    async def close(self) -> None:
        return None
