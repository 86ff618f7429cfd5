"""ChatFormat and splicing on SmolLM2-135M-Instruct's own tokenizer (plain ChatML: the Hermes fallback).

Slow: the tokenizer is read out of the GGUF file (~25 s on two busy cores) unless the converted default
checkpoint is already cached.
"""

from __future__ import annotations

from typing import Any

import pytest

from harnessrl.chat.format import ChatFormat, hermes_tool_block
from harnessrl.chat.tito import Turn, build_prompt
from harnessrl.types import ChatMessage, ToolCall, ToolSpec

pytestmark = pytest.mark.slow

BASH = ToolSpec(name="Bash", parameters={"type": "object", "properties": {"command": {"type": "string"}}})


@pytest.fixture(scope="module")
def tok() -> Any:
    from transformers import AutoTokenizer

    from harnessrl.engines import models

    if (models.model_cache() / models.DEFAULT_NAME / models.MARKER).is_file():
        return models.load_tokenizer("default")
    gguf = models.smollm2_gguf()
    return AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)


def m(role: str, content: str = "", **kw: Any) -> ChatMessage:
    return ChatMessage(role=role, content=content, **kw)  # type: ignore[arg-type]


def test_smollm2_format_basics(tok: Any) -> None:
    fmt = ChatFormat(tok)
    assert not fmt.native_tools
    assert fmt.stop_token_ids == (2, 0)
    assert fmt.assistant_start_ids == (1, 520, 9531)
    msgs = [m("user", "Say hi.")]
    expected = tok.apply_chat_template(
        [{"role": "user", "content": "Say hi."}], add_generation_prompt=True, return_dict=True
    )["input_ids"]
    assert fmt.render(msgs, []) == list(expected)
    assert tok.decode(expected).startswith("<|im_start|>system\nYou are a helpful AI assistant named SmolLM")
    assert tok.decode(fmt.render(msgs, [BASH])) == (
        f"<|im_start|>system\n{hermes_tool_block([BASH])}<|im_end|>\n"
        "<|im_start|>user\nSay hi.<|im_end|>\n<|im_start|>assistant\n"
    )
    turn = m("assistant", "Running.", tool_calls=[ToolCall(name="Bash", arguments={"command": "ls"})])
    ids = fmt.render_assistant(turn)
    assert ids[-1] == 2
    assert fmt.parse(ids).message() == turn


def test_smollm2_session_splices_equal_render(tok: Any) -> None:
    fmt = ChatFormat(tok)
    msgs = [m("system", "Agent."), m("user", "make hello.txt")]
    history: list[Turn] = []
    outputs = [
        m("assistant", tool_calls=[ToolCall(name="Bash", arguments={"command": "printf hi > hello.txt"})]),
        m("assistant", "done"),
    ]
    previous: list[int] = []
    for i, out in enumerate(outputs):
        prompt = build_prompt(fmt, msgs, [BASH], history)
        assert prompt.render == ("rendered" if i == 0 else "spliced")
        assert prompt.ids[: len(previous)] == previous
        assert prompt.ids == fmt.render(msgs, [BASH])
        out_ids = fmt.render_assistant(out)
        history.append(Turn(f"c{i}", list(msgs), [BASH], prompt.ids, out_ids, fmt.parse(out_ids).message()))
        previous = prompt.ids + out_ids
        msgs = [*msgs, history[-1].output, m("tool", "(no output)")]


def test_smollm2_piecewise_encoding_is_exact(tok: Any) -> None:
    from harnessrl.chat.encode import SegmentEncoder

    enc = SegmentEncoder(tok)
    texts = [
        "<|im_start|>system\nYou are SmolLM.<|im_end|>\n<|im_start|>user\n  spaced\n\n<|im_end|>",
        "<|endoftext|>x<|im_start|><|im_start|>e\u0301 <tool_call>\n{}\n</tool_call><|im_end|>",
        "",
    ]
    for text in texts:
        assert enc.encode(text) == list(tok.encode(text, add_special_tokens=False)), text
    assert enc.exact
