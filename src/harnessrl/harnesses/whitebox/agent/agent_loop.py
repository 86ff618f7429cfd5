"""The agent loop: five pluggable parts (prompt, tools, observation, context, workflow) around one loop.

    python3 -m wbagent <config.json>     # prints one JSON result line last; exit 0 when it finished

Each step: the context part picks the messages to send, the model answers, the reply is parsed into
actions (a broken one gets an observation saying what was wrong), actions run with a per-command
timeout and their observations go back. A reply without an action is a final answer; the workflow
decides whether it ends the run. The run stops at the step limit (not ok) or on a model-call error.
"""

from __future__ import annotations

import json
from typing import Any

from . import context, observe, prompts, tools, workflow
from .client import Client, Message, ModelError, Reply

FACTORS = (prompts.LEVELS, tools.LEVELS, observe.LEVELS, context.LEVELS, workflow.LEVELS)
EMPTY = "Your last reply was empty. Act (see the instructions) or give your final answer."


def levels(code: str) -> list[str]:
    """`01220` -> the level name of each factor; ValueError for anything but five digits 0-2."""
    if len(code) != 5 or any(c not in "012" for c in code):
        raise ValueError(f"a whitebox configuration is five digits 0-2, got {code!r}")
    return [names[int(c)] for names, c in zip(FACTORS, code, strict=True)]


class Agent:
    def __init__(self, cfg: dict[str, Any]) -> None:
        self.cfg = cfg
        p, t, o, c, w = levels(cfg["code"])
        self.client = Client(
            cfg["base_url"], cfg["api_key"], cfg.get("model", "whitebox"),
            int(cfg.get("max_tokens", 1024)), float(cfg.get("call_timeout_s", 600)),
        )  # fmt: skip
        self.tools = tools.interface(t)
        if cfg.get("subagents") and isinstance(self.tools, tools.Native):
            tools.add_delegate(self.tools)
        self.render = observe.RENDER[o]
        self.workflow = workflow.workflow(w)
        self.system = prompts.system_prompt(cfg.get("role", p), self.tools.instructions)
        task = cfg["prompt"]
        self.context: Any = {
            "full": lambda: context.Full(),
            "window": lambda: context.Window(int(cfg.get("window_turns", 2))),
            "compaction": lambda: context.Compaction(
                int(cfg.get("compact_tokens", 3000)), task, self.summarize
            ),
        }[c]()

    def summarize(self, messages: list[Message]) -> str:
        return self.client.chat(messages, self.tools.specs).text

    def delegate(self, task: str) -> str:
        """A sub-agent on `task`: the helper prompt, the same tools but `delegate`, full context, free
        loop, at most `subagent_steps` (8) steps; its final answer is the tool result."""
        cfg = dict(self.cfg, prompt=task, role="helper", subagents=False)
        cfg.update(code=self.cfg["code"][:3] + "00", max_steps=int(self.cfg.get("subagent_steps", 8)))
        helper = Agent(cfg)
        try:
            result = helper.run()
        finally:
            self.client.calls += helper.client.calls
        return str(result.get("final") or f"The helper stopped: {result.get('error')}")

    def act(self, reply: Reply, history: list[Message]) -> str | None:
        """Run the reply's actions (observations appended); returns the final answer when there are none."""
        actions = self.tools.parse(reply)
        if not actions:
            return reply.text
        for act in actions:
            if act.error:
                text = f"Error: {act.error}"
            elif act.name == tools.DELEGATE:
                text = self.delegate(str(act.args["task"]))
            else:
                outcome = self.tools.run(act, float(self.cfg.get("command_timeout_s", 60)))
                self.workflow.observed(outcome)
                text = self.render(outcome, int(self.cfg.get("observation_bytes", 2000)))
            history.append(self.tools.answer(act, text))
        return None

    def run(self) -> dict[str, Any]:
        history: list[Message] = [
            {"role": "system", "content": self.system},
            {"role": "user", "content": self.cfg["prompt"] + self.workflow.opening},
        ]
        limit = int(self.cfg.get("max_steps", 30))
        for step in range(1, limit + 1):
            history, messages = self.context.prepare(history)
            reply = self.client.chat(messages, self.tools.specs)
            history.append(reply.message())
            if not reply.text.strip() and not reply.tool_calls:
                history.append({"role": "user", "content": EMPTY})
                continue
            final = self.act(reply, history)
            if final is None:
                continue
            follow = self.workflow.on_final()
            if follow is None:
                return {"ok": True, "final": final, "turns": step}
            history.append({"role": "user", "content": follow})
        return {"ok": False, "error": f"step limit of {limit} reached", "turns": limit}


def main(argv: list[str]) -> int:
    with open(argv[1], encoding="utf-8") as f:
        cfg = json.load(f)
    agent = Agent(cfg)
    try:
        result = agent.run()
    except ModelError as e:
        result = {"ok": False, "error": str(e)}
    result.update(code=cfg["code"], calls=agent.client.calls)
    print(json.dumps(result))
    return 0 if result["ok"] else 1
