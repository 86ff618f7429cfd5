"""`chat.render.DirectRenderer`: the chat template's text without `apply_chat_template`'s input copying.
`ChatFormat` uses it only after a probe check against `apply_chat_template`; the text must be the same
on real captured traffic, and a renderer that differs (or cannot be built) must leave the long way on."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harnessrl.chat import render
from harnessrl.chat.format import ChatFormat
from harnessrl.chat.render import make_direct_renderer
from harnessrl.chat.tokenizers import qwen3_tokenizer
from harnessrl.proxy.dialects import resolve
from harnessrl.types import ChatMessage, ToolSpec

KEYS = "{% for m in messages %}{{ m | tojson }}\n{% endfor %}{{ eos_token }}{{ add_generation_prompt }}"
"""A template that shows every key of every message, in order, and a special token."""


class WithTemplate:
    """The Qwen3 tokenizer behind another chat template; `suffix` is appended by apply_chat_template
    (a stand-in for a transformers whose rendering differs from the direct one)."""

    def __init__(self, tok: Any, template: str, suffix: str = "") -> None:
        self._tok = tok
        self.chat_template = template
        self.suffix = suffix

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tok, name)

    def apply_chat_template(self, conversation: Any, **kwargs: Any) -> Any:
        text = self._tok.apply_chat_template(conversation, chat_template=self.chat_template, **kwargs)
        return text + self.suffix


def the_long_way(fmt: ChatFormat) -> ChatFormat:
    slow = ChatFormat(fmt.tokenizer, enable_thinking=fmt.enable_thinking)
    slow.__dict__["direct_render"] = False  # a cached_property: pre-seed its value
    return slow


def captured_requests(shared_fixtures: Path) -> list[tuple[list[ChatMessage], list[ToolSpec]]]:
    out = []
    for path in sorted((shared_fixtures / "harness-traffic").glob("*/*.json")):
        captured = json.loads(path.read_text())
        route = captured["path"].split("?")[0].rstrip("/")
        endpoint = resolve(route)
        if endpoint is not None and isinstance(captured.get("body"), dict):
            req = endpoint.dialect.parse(captured["body"])
            out.append((req.messages, req.tools))
    return out


@pytest.mark.parametrize("thinking", [False, True])
def test_direct_render_equals_apply_chat_template_on_captured_traffic(
    shared_fixtures: Path, thinking: bool
) -> None:
    fmt = ChatFormat(qwen3_tokenizer(), enable_thinking=thinking)
    assert fmt.direct_render
    slow = the_long_way(fmt)
    requests = captured_requests(shared_fixtures)
    assert len(requests) >= 10
    for messages, tools in requests:
        for generation in (True, False):
            for offered in (tools, []):
                fast_text = fmt.template_text(messages, offered, generation=generation)
                assert fast_text == slow.template_text(messages, offered, generation=generation)
        assert fmt.render(messages, tools) == slow.render(messages, tools)


def test_direct_render_drops_none_values_and_aliases_reasoning_like_transformers() -> None:
    tok = WithTemplate(qwen3_tokenizer(), KEYS)
    direct = make_direct_renderer(tok)
    assert direct is not None
    messages = [
        {"role": "user", "content": "hi", "name": None},
        {"role": "assistant", "content": "ok", "reasoning": "because"},
        {"role": "assistant", "content": "ok", "reasoning_content": "so", "tool_calls": None},
    ]
    for generation in (True, False):
        expected = tok.apply_chat_template(messages, add_generation_prompt=generation, tokenize=False)
        assert direct.render(messages, None, generation=generation) == expected
    assert '"thinking": "because"' in expected and "null" not in expected and "<|im_end|>" in expected


def test_direct_render_is_not_used_when_it_differs() -> None:
    fmt = ChatFormat(WithTemplate(qwen3_tokenizer(), KEYS, suffix="!"))
    assert not fmt.direct_render
    text = fmt.template_text([ChatMessage(role="user", content="x")], [], generation=True)
    assert text.endswith("True!")  # what apply_chat_template says, not the direct renderer


def test_direct_render_is_off_without_the_transformers_internals(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(render, "_internals", lambda: None)
    fmt = ChatFormat(qwen3_tokenizer())
    assert not fmt.direct_render
    msgs = [ChatMessage(role="user", content="x")]
    assert fmt.render(msgs, []) == ChatFormat(qwen3_tokenizer()).render(msgs, [])
