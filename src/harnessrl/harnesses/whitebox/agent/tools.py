"""Factor 2, the tool interface: one `bash` tool / file tools / no native tools (fenced shell blocks).

An interface says what tools the request offers (`specs`), how the model is told to act
(`instructions`), how a reply becomes actions (`parse`: a broken action carries its `error` instead
of raising), how an action runs (`run`), and how its observation goes back (`answer`: a `tool`
message for a native call, a `user` message for a fenced block).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .client import Message, Reply
from .observe import CommandOutcome

LEVELS = ("bash", "files", "fenced")
SHELL_TOOLS = {"bash": ("bash", "command"), "files": ("run", "cmd")}
"""Level -> (its shell tool, the argument holding the command line); `fenced` has no tools: the
model writes a ```bash block. The adapter reads this table (`Whitebox.shell_tool`)."""


@dataclass
class Action:
    name: str
    args: dict[str, Any] = field(default_factory=dict)
    call_id: str | None = None
    """The native tool call this answers; None for a fenced block (or a reply with no usable call)."""
    error: str = ""
    """Why this action cannot run (the model is told, nothing runs)."""


def run_shell(command: str, timeout_s: float) -> CommandOutcome:
    """`bash -c command` in its own process group; the whole group is killed at the timeout."""
    t0 = time.monotonic()
    shell = "/bin/bash" if os.path.exists("/bin/bash") else "/bin/sh"
    proc = subprocess.Popen(
        [shell, "-c", command], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        start_new_session=True,
    )  # fmt: skip
    try:
        out, err = proc.communicate(timeout=timeout_s)
        code = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        err += f"\n[command timed out after {timeout_s:g} s]".encode()
        code = 124
    text = (out.decode("utf-8", "replace"), err.decode("utf-8", "replace"))
    return CommandOutcome(code, text[0], text[1], time.monotonic() - t0)


def _spec(name: str, doc: str, **params: str) -> dict[str, Any]:
    props = {k: {"type": "string", "description": v} for k, v in params.items()}
    schema = {"type": "object", "properties": props, "required": list(params)}
    return {"type": "function", "function": {"name": name, "description": doc, "parameters": schema}}


def _file_op(name: str, a: dict[str, Any]) -> str:
    path = Path(a.get("path") or ".")
    if name == "read_file":
        return path.read_text(errors="replace")
    if name == "list_dir":
        return "".join(f"{p.name}{'/' if p.is_dir() else ''}\n" for p in sorted(path.iterdir()))
    if name == "write_file":
        path.parent.mkdir(parents=True, exist_ok=True)
        return f"wrote {path.write_text(a['content'])} characters to {path}"
    text = path.read_text()
    if (n := text.count(a["old"])) != 1:
        raise ValueError(f"`old` must occur exactly once in {path}; it occurs {n} times")
    path.write_text(text.replace(a["old"], a["new"]))
    return f"edited {path}"


DELEGATE = "delegate"
DELEGATE_HOW = (
    " To hand a self-contained sub-task to a helper agent with a fresh context, call `delegate` with "
    "the task; its report comes back as the result."
)


def add_delegate(tools: Native) -> None:
    """Offer the `delegate` tool (a sub-agent, run by the agent loop) besides the interface's own."""
    tools.specs.append(
        _spec(DELEGATE, "Run a helper agent on a sub-task; returns its report.", task="The sub-task.")
    )
    tools.required[DELEGATE] = ["task"]
    tools.instructions += DELEGATE_HOW


class Native:
    """Native tool calls: `bash` alone, or the file tools (read, write, edit, list, run)."""

    def __init__(self, level: str) -> None:
        name, arg = SHELL_TOOLS[level]
        if level == "bash":
            self.specs = [_spec(name, "Run a bash command in the workspace.", **{arg: "The command line."})]
            self.instructions = "Act by calling the `bash` tool with one command line."
        else:
            self.specs = [
                _spec("read_file", "Return a file's text.", path="File path."),
                _spec("write_file", "Create or overwrite a file.", path="File path.", content="Full text."),
                _spec(
                    "edit_file",
                    "Replace the one exact occurrence of `old` with `new`.",
                    path="File path.",
                    old="Exact text to replace.",
                    new="Replacement.",
                ),
                _spec("list_dir", "List a folder.", path="Folder path."),
                _spec(name, "Run a shell command.", **{arg: "The command line."}),
            ]
            self.instructions = (
                "Act by calling the file tools (read_file, write_file, edit_file, list_dir) or run."
            )
        self.required = {s["function"]["name"]: s["function"]["parameters"]["required"] for s in self.specs}

    def parse(self, reply: Reply) -> list[Action]:
        out = []
        for i, call in enumerate(reply.tool_calls):
            name, raw = call["function"]["name"], call["function"]["arguments"] or "{}"
            act = Action(name, call_id=call["id"] or f"call_{i}")
            try:
                act.args = json.loads(raw)
            except ValueError as e:
                act.error = f"the arguments of {name!r} are not valid JSON ({e}): {raw[:200]}"
            if not act.error and name not in self.required:
                act.error = f"unknown tool {name!r}; the tools are: {', '.join(self.required)}"
            elif not act.error and not isinstance(act.args, dict):
                act.error = f"the arguments of {name!r} must be a JSON object"
            elif not act.error and (miss := [k for k in self.required[name] if k not in act.args]):
                act.error = f"{name!r} is missing the argument(s) {', '.join(miss)}"
            out.append(act)
        if not out and "<tool_call>" in reply.text:
            out.append(Action("", error="your tool call could not be parsed; send valid JSON arguments"))
        return out

    def run(self, act: Action, timeout_s: float) -> CommandOutcome:
        shells = dict(SHELL_TOOLS.values())
        if act.name in shells:
            return run_shell(str(act.args.get(shells[act.name], "")), timeout_s)
        t0 = time.monotonic()
        try:
            return CommandOutcome(0, _file_op(act.name, act.args), "", time.monotonic() - t0)
        except (OSError, ValueError, KeyError, TypeError) as e:
            return CommandOutcome(1, "", f"{type(e).__name__}: {e}", time.monotonic() - t0)

    def answer(self, act: Action, text: str) -> Message:
        if act.call_id is None:
            return {"role": "user", "content": text}
        return {"role": "tool", "tool_call_id": act.call_id, "content": text}


BLOCK = re.compile(r"```(?:bash|sh)?[ \t]*\n(.*?)```", re.DOTALL)


class Fenced:
    """No native tools: the model writes one ```bash block per turn; the harness runs it."""

    specs: list[dict[str, Any]] | None = None
    instructions = (
        "There are no tools. To run a shell command, put it in one fenced block:\n"
        "```bash\nls -la\n```\nSend exactly one such block per reply; the output comes back as the "
        "next message. A reply without a block is your final answer."
    )

    def parse(self, reply: Reply) -> list[Action]:
        blocks = BLOCK.findall(reply.text)
        if len(blocks) == 1:
            return [Action("shell", {"command": blocks[0].strip()})]
        if len(blocks) > 1:
            return [Action("", error=f"found {len(blocks)} ```bash blocks; send exactly one per reply")]
        if "```" in reply.text:
            return [Action("", error="no complete ```bash block found (unclosed or another language)")]
        return []

    def run(self, act: Action, timeout_s: float) -> CommandOutcome:
        return run_shell(act.args["command"], timeout_s)

    def answer(self, act: Action, text: str) -> Message:
        return {"role": "user", "content": f"Observation:\n{text}" if not act.error else text}


def interface(level: str) -> Native | Fenced:
    return Fenced() if level == "fenced" else Native(level)
