"""Factor 1, the system prompt: terse / detailed with conventions and examples / persona + checklist.

Each level wraps the tool interface's own usage text (`instructions`), so the model is always told how
to act; the levels differ in everything around it.
"""

from __future__ import annotations

LEVELS = ("terse", "detailed", "persona")

FINAL = "When the task is done, reply with a short final answer and no action."

TERSE = "Solve the task in the current directory.\n{instructions}\n" + FINAL

DETAILED = (
    """You are working in a fresh workspace folder; the task below concerns files in it.

Conventions:
- Work only inside the current directory; paths are relative to it.
- Look before you change: list files and read them first.
- Prefer small, checkable steps; one action per turn.
- Quote file names with spaces; never start interactive programs (editors, pagers).

How to act:
{instructions}

Example of a good first step: list the files, then read the one the task names.
Example of a good last step: show the file you wrote, then answer.
"""
    + FINAL
)

PERSONA = (
    """You are Ada, a meticulous senior engineer who never guesses: you check every claim against
the files themselves.

{instructions}

Checklist before you answer:
[ ] I read every input file the task mentions.
[ ] The output has exactly the name, location and format the task asks for.
[ ] I looked at the output after writing it.
"""
    + FINAL
)

HELPER = (
    "You are a helper agent with a fresh context. Do only the sub-task you are given, in the current "
    "directory.\n{instructions}\nThen reply with a short report of what you did and found, and no action."
)
"""The system prompt of a sub-agent started by the `delegate` tool (`agent_loop.Agent.delegate`)."""

_TEXT = {"terse": TERSE, "detailed": DETAILED, "persona": PERSONA, "helper": HELPER}


def system_prompt(level: str, instructions: str) -> str:
    return _TEXT[level].format(instructions=instructions)
