"""Captured harness traffic sent again through a live proxy: the ModelCall records it makes.

    calls = replay(FIXTURES / "harness-traffic" / "claude-code-subagent")

Each request of a `harness-traffic` folder is posted, as captured, to a live proxy over the scripted
engine (real Qwen3 tokenizer and chat format), which answers the i-th request with the fixture's i-th
recorded reply (`InOrder`: a sub-agent's first call holds no assistant turn, so the scripted
engine's usual choice by turn count would answer it with the main thread's first reply); a request
the capture server refused (`["error", status, body]`, e.g. "prompt is too long") is left out, as
the proxy's own length check would have refused it before sampling.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from harnessrl.engines.scripted import ScriptedEngine
from harnessrl.types import ModelCall

DROP_HEADERS = {"host", "content-length", "accept-encoding", "connection", "x-api-key", "authorization"}


class InOrder(ScriptedEngine):
    """The scripted engine answering its k-th call with turn k (the last turn after that)."""

    def select(self, prompt_ids: list[int]) -> tuple[int, int]:
        return 0, min(self.calls - 1, len(self.turn_ids[0]) - 1)


def replay(folder: Path) -> list[ModelCall]:
    """The calls the proxy recorded for `folder`'s requests (module docstring)."""
    from harnessrl.chat.format import ChatFormat
    from harnessrl.chat.tokenizers import qwen3_tokenizer
    from harnessrl.proxy.deps import default_deps
    from harnessrl.proxy.server import ThreadedProxyServer
    from harnessrl.proxy.sessions import SessionStore
    from harnessrl.proxy.testing import turn_from_decision

    captured = [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]
    captured = [c for c in captured if c["reply"].get("decision", ["error"])[0] != "error"]
    fmt = ChatFormat(qwen3_tokenizer())
    engine = InOrder(fmt, [turn_from_decision(c["reply"]["decision"]) for c in captured])
    server = ThreadedProxyServer(default_deps(engine, fmt, SessionStore(None))).start()
    try:
        info = server.server.deps.sessions.open(f"trace-{folder.name}")
        for c in captured:
            headers = {k: v for k, v in c["headers"].items() if k.lower() not in DROP_HEADERS}
            resp = httpx.post(info.base_url + c["path"], json=c["body"], headers=headers, timeout=60)
            assert resp.status_code == 200, resp.text
        return server.server.deps.sessions.calls(f"trace-{folder.name}")
    finally:
        server.stop()
