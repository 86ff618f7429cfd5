"""`ChatFormat.suffix_after` renders only the tail of a conversation when the template allows it
(checked once per format against full renders); a template whose later turns depend on earlier ones
keeps full rendering. Either way the spliced prompt must equal a full render where the template is
prefix-stable."""

from __future__ import annotations

import pytest
from transformers import AutoTokenizer

from harnessrl.chat.format import ChatFormat
from harnessrl.chat.tito import Turn, build_prompt
from harnessrl.chat.tokenizers import qwen3_tokenizer, qwen3_tokenizer_dir
from harnessrl.types import ChatMessage, ToolCall, ToolSpec

SYSTEM_TAGGED = (
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}"
    "{% if m.role == 'user' and messages[0].role == 'system' %} (see system){% endif %}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
"""User turns depend on whether there is a system prompt: a tail needs it, a bare tail breaks."""
NUMBERED = (
    "{% for m in messages %}<|im_start|>{{ m.role }} {{ loop.index }}\n{{ m.content }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
TOOLS = [ToolSpec(name="sh", parameters={"type": "object", "properties": {"cmd": {"type": "string"}}})]


def session(fmt: ChatFormat, turns: int) -> tuple[list[ChatMessage], list[Turn]]:
    """A conversation of `turns` tool round trips, each call spliced onto the one before."""
    msgs = [ChatMessage(role="system", content="sys"), ChatMessage(role="user", content="go")]
    history: list[Turn] = []
    for k in range(turns):
        prompt = build_prompt(fmt, msgs, TOOLS, history)
        assert prompt.render == ("spliced" if k else "rendered")
        out = ChatMessage(
            role="assistant", tool_calls=[ToolCall(id=f"id{k}", name="sh", arguments={"cmd": str(k)})]
        )
        out_ids = fmt.render_assistant(out)
        history.append(Turn(f"c{k}", list(msgs), TOOLS, prompt.ids, out_ids, out))
        msgs = [*msgs, out, ChatMessage(role="tool", content=f"result {k}", tool_call_id=f"id{k}")]
    return msgs, history


def full_rendering(fmt: ChatFormat) -> ChatFormat:
    """The same format with the tail optimisation and the direct template rendering switched off."""
    slow = ChatFormat(fmt.tokenizer, enable_thinking=fmt.enable_thinking)
    slow.__dict__["local_suffix"] = False  # a cached_property: pre-seed its value
    slow.__dict__["direct_render"] = False
    return slow


@pytest.mark.parametrize("thinking", [False, True])
def test_qwen3_tail_rendering_equals_full_rendering_on_long_sessions(thinking: bool) -> None:
    fmt = ChatFormat(qwen3_tokenizer(), enable_thinking=thinking)
    assert fmt.local_suffix and fmt.bare_suffix and fmt.direct_render
    msgs, history = session(fmt, 12)
    prompt = build_prompt(fmt, msgs, TOOLS, history)
    assert prompt.render == "spliced" and prompt.spliced_from == "c11"
    turn = history[-1]
    assert prompt.ids[: len(turn.prompt_ids) + len(turn.output_ids)] == turn.prompt_ids + turn.output_ids
    assert prompt == build_prompt(full_rendering(fmt), msgs, TOOLS, history)


def test_history_dependent_template_keeps_full_rendering() -> None:
    tok = AutoTokenizer.from_pretrained(str(qwen3_tokenizer_dir()))
    tok.chat_template = NUMBERED
    fmt = ChatFormat(tok)
    assert not fmt.local_suffix  # turn numbers depend on what came before
    msgs, history = session(fmt, 4)
    prompt = build_prompt(fmt, msgs, TOOLS, history)
    assert prompt.render == "spliced"
    # The suffix carries the right turn number only because the whole conversation was rendered.
    tail = (
        "<|im_start|>user 10\n<tool_response>\nresult 3\n</tool_response><|im_end|>\n<|im_start|>assistant\n"
    )
    assert fmt.tokenizer.decode(prompt.ids).endswith(tail)


def test_system_dependent_template_keeps_the_system_prompt_in_its_tail() -> None:
    tok = AutoTokenizer.from_pretrained(str(qwen3_tokenizer_dir()))
    tok.chat_template = SYSTEM_TAGGED
    fmt = ChatFormat(tok)
    assert fmt.local_suffix and not fmt.bare_suffix
    msgs, history = session(fmt, 4)
    msgs.append(ChatMessage(role="user", content="and now?"))
    prompt = build_prompt(fmt, msgs, TOOLS, history)
    assert prompt.render == "spliced"
    assert prompt == build_prompt(full_rendering(fmt), msgs, TOOLS, history)
    tail = "and now? (see system)<|im_end|>\n<|im_start|>assistant\n"
    assert fmt.tokenizer.decode(prompt.ids).endswith(tail)
