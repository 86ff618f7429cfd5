"""ChatFormat on the real Qwen3 tokenizer (native tools) and on a plain ChatML template (Hermes fallback)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from harnessrl.chat.format import ChatFormat, hermes_tool_block, tool_spec_json
from harnessrl.chat.tokenizers import qwen3_tokenizer
from harnessrl.types import ChatMessage, RequestError, ToolCall, ToolSpec

IM_START, IM_END, NL = 151644, 151645, 198
BASH = ToolSpec(
    name="Bash",
    description="Run a shell command.",
    parameters={"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
)
CHATML = (
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\\nDefault system.<|im_end|>\\n' }}{% endif %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)


class ChatMLTokenizer:
    """The Qwen3 tokenizer behind a plain ChatML template that cannot render tools (like SmolLM2's)."""

    chat_template = CHATML

    def __init__(self, tok: Any) -> None:
        self._tok = tok

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tok, name)

    def apply_chat_template(self, conversation: Any, **kwargs: Any) -> Any:
        return self._tok.apply_chat_template(conversation, chat_template=CHATML, **kwargs)


@pytest.fixture(scope="module")
def tok() -> Any:
    return qwen3_tokenizer()


def m(role: str, content: str = "", **kw: Any) -> ChatMessage:
    return ChatMessage(role=role, content=content, **kw)  # type: ignore[arg-type]


def test_render_exact_ids_without_tools(tok: Any) -> None:
    fmt = ChatFormat(tok)
    ids = fmt.render([m("system", "Be brief."), m("user", "Say hi.")], [])
    # <|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nSay hi.<|im_end|>\n<|im_start|>assistant\n
    # <think>\n\n</think>\n\n  (thinking disabled: the template closes an empty think block)
    assert ids == [
        IM_START, 8948, NL, 3430, 9814, 13, IM_END, NL,
        IM_START, 872, NL, 45764, 15588, 13, IM_END, NL,
        IM_START, 77091, NL, 151667, 271, 151668, 271,
    ]  # fmt: skip
    thinking = ChatFormat(tok, enable_thinking=True).render(
        [m("system", "Be brief."), m("user", "Say hi.")], []
    )
    assert thinking == ids[:-4]
    assert fmt.stop_token_ids == (IM_END, 151643)
    assert fmt.assistant_start_ids == (IM_START, 77091)
    assert fmt.count_tokens([m("system", "Be brief."), m("user", "Say hi.")], []) == 23


def test_render_with_native_tools_and_merged_system(tok: Any) -> None:
    fmt = ChatFormat(tok, enable_thinking=True)
    msgs = [m("developer", "You are an agent."), m("system", "CWD: /w"), m("user", "ls")]
    text = tok.decode(fmt.render(msgs, [BASH]))
    spec = json.dumps(tool_spec_json(BASH), ensure_ascii=False)
    assert text.startswith("<|im_start|>system\nYou are an agent.\n\nCWD: /w\n\n# Tools\n\n")
    assert f"<tools>\n{spec}\n</tools>" in text
    assert text.endswith("</tool_call><|im_end|>\n<|im_start|>user\nls<|im_end|>\n<|im_start|>assistant\n")
    assert fmt.native_tools


def test_tool_results_grouped_into_one_user_turn(tok: Any) -> None:
    fmt = ChatFormat(tok, enable_thinking=True)
    call = ToolCall(id="t1", name="Bash", arguments={"command": "ls"})
    msgs = [m("user", "go"), m("assistant", tool_calls=[call, call]), m("tool", "a"), m("tool", "b")]
    text = tok.decode(fmt.render(msgs, [BASH]))
    assert text.endswith(
        "<|im_start|>user\n<tool_response>\na\n</tool_response>\n<tool_response>\nb\n</tool_response><|im_end|>\n"
        "<|im_start|>assistant\n"
    )


def test_render_assistant_exact_ids_and_matches_template_history(tok: Any) -> None:
    fmt = ChatFormat(tok)
    call = ToolCall(name="Bash", arguments={"command": "printf hi > hello.txt"})
    ids = fmt.render_assistant(m("assistant", tool_calls=[call]))
    assert ids == [
        151657, NL, 4913, 606, 788, 330, 33, 988, 497, 330, 16370, 788, 5212, 5631, 788, 330,
        2517, 15588, 861, 23811, 3909, 95642, 151658, IM_END,
    ]  # fmt: skip
    assert fmt.render_assistant(m("assistant", "done")) == [10438, IM_END]
    # The template writes the same turn identically when it is history (text, then calls).
    turn = m("assistant", "Sure.", tool_calls=[call, ToolCall(name="Read", arguments={"path": "é"})])
    hist = fmt.template_text([m("user", "x"), turn, m("user", "y")], [], generation=False)
    assert "<|im_start|>assistant\n" + fmt.assistant_text(turn) + "\n" in hist


@pytest.mark.parametrize("thinking", [False, True])
def test_render_assistant_parse_round_trip(tok: Any, thinking: bool) -> None:
    fmt = ChatFormat(tok, enable_thinking=thinking)
    turns = [
        m("assistant", "Hello, world!"),
        m("assistant", "", tool_calls=[ToolCall(name="Edit", arguments={"path": "ü.txt", "n": [1, 2.5]})]),
        m(
            "assistant",
            "Two calls.",
            tool_calls=[ToolCall(name="a", arguments={}), ToolCall(name="b", arguments={"q": "x\ny"})],
        ),
    ]
    for turn in turns:
        parsed = fmt.parse(fmt.render_assistant(turn))
        assert parsed.message() == turn
        assert parsed.malformed == []
    with_reasoning = m("assistant", "4", reasoning="2+2")
    parsed = fmt.parse(fmt.render_assistant(with_reasoning))
    assert parsed.message() == (with_reasoning if thinking else m("assistant", "4"))


def test_parse_stops_at_end_token_and_never_raises(tok: Any) -> None:
    fmt = ChatFormat(tok)
    ids = fmt.render_assistant(m("assistant", "done"))
    assert fmt.parse([*ids, 9707, IM_END]).text == "done"
    assert fmt.parse([10438]).text == "done"
    assert fmt.parse([10438, 10**9]).text == "done"  # the tokenizer skips ids it does not know
    bad = fmt.parse([10438, -1])
    assert (bad.text, bad.tool_calls, bad.malformed) == (
        "",
        [],
        ["undecodable output: number too small to fit in target type"],
    )
    broken = [*fmt.encode('<tool_call>\n{"name": "Bash", "arguments": {\n</tool_call>'), IM_END]
    out = fmt.parse(broken)
    assert out.tool_calls == [] and out.malformed == [out.text]


def test_hermes_fallback_on_plain_chatml(tok: Any) -> None:
    fmt = ChatFormat(ChatMLTokenizer(tok))
    assert not fmt.native_tools
    call = ToolCall(id="x", name="Bash", arguments={"command": "ls"})
    msgs = [m("user", "go"), m("assistant", "Ok.", tool_calls=[call]), m("tool", "a"), m("tool", "b")]
    text = tok.decode(fmt.render(msgs, [BASH]))
    assert text == (
        f"<|im_start|>system\n{hermes_tool_block([BASH])}<|im_end|>\n"
        "<|im_start|>user\ngo<|im_end|>\n"
        '<|im_start|>assistant\nOk.\n<tool_call>\n{"name": "Bash", "arguments": {"command": "ls"}}\n'
        "</tool_call><|im_end|>\n"
        "<|im_start|>user\n<tool_response>\na\n</tool_response>\n<tool_response>\nb\n</tool_response><|im_end|>\n"
        "<|im_start|>assistant\n"
    )
    no_tools = tok.decode(fmt.render([m("system", "S"), m("developer", "D"), m("user", "u")], []))
    assert no_tools.startswith("<|im_start|>system\nS\n\nD<|im_end|>\n<|im_start|>user\nu<|im_end|>")
    assert tok.decode(fmt.render([m("user", "u")], [])).startswith("<|im_start|>system\nDefault system.")


def test_custom_tool_offered_as_single_input_function() -> None:
    spec = tool_spec_json(ToolSpec(name="apply_patch", description="Patch files.", type="custom"))
    assert spec == {
        "type": "function",
        "function": {
            "name": "apply_patch",
            "description": "Patch files.",
            "parameters": {
                "type": "object",
                "properties": {"input": {"type": "string", "description": "Freeform text input."}},
                "required": ["input"],
            },
        },
    }


def test_tokenizer_without_template_is_rejected(tok: Any) -> None:
    class NoTemplate(ChatMLTokenizer):
        chat_template = None  # type: ignore[assignment]

    with pytest.raises(ValueError, match="no \\(single\\) chat template"):
        ChatFormat(NoTemplate(tok))


def test_template_refusal_is_a_request_error(tok: Any) -> None:
    class Strict(ChatMLTokenizer):
        chat_template = (
            "{% if messages[-1]['role'] != 'user' %}{{ raise_exception('last must be user') }}{% endif %}"
        )

        def apply_chat_template(self, conversation: Any, **kwargs: Any) -> Any:
            return self._tok.apply_chat_template(conversation, chat_template=self.chat_template, **kwargs)

    fmt = ChatFormat(Strict(tok))
    with pytest.raises(
        RequestError, match="the chat template rejected the messages: last must be user"
    ) as err:
        fmt.render([m("user", "a"), m("assistant", "b")], [])
    assert (err.value.status, err.value.param) == (400, "messages")
