"""Chat formats: canonical messages + tool specs -> prompt token ids, and output ids -> assistant turn.

`ChatFormat` wraps a Hugging Face tokenizer and its chat template. Rendering goes through the template
(so a prompt is what the model was trained on) with three normalisations, applied before the template
sees the messages:

- **System prompt.** `developer` messages count as `system`. All system/developer messages, wherever
  they sit, are merged in order (joined by a blank line) into one system message at the front: several
  templates (Qwen3 among them) only honour a system message in first position, and harnesses send
  several (Claude Code: 3 system blocks plus a `system` entry inside `messages`; Codex: several
  `developer` items).
- **Tools.** When the template renders tools itself (it mentions `tools` and `tool_calls`, e.g. Qwen3),
  it gets them as OpenAI-style function specs. Otherwise (SmolLM2's plain ChatML) a Hermes-style tool
  block is appended to the system prompt, assistant tool calls are written into the assistant content
  as `<tool_call>` blocks and runs of tool results become one user turn of `<tool_response>` blocks,
  mirroring what Qwen3's template does natively. Freeform (`custom`) tools are offered as functions with
  one string argument `input`.
- **Reasoning.** Earlier turns' reasoning is passed to the template only when thinking is enabled; the
  template decides what to keep (Qwen3 drops it before the last user query: that is why `tito` splices).

Only ChatML-family templates are supported (`<|im_start|>role ... <|im_end|>`); the end-of-turn token is
`<|im_end|>` when the vocabulary has it, else the tokenizer's eos token. Text is encoded with special
tokens recognised, so a literal `<|im_end|>` inside message text becomes the special token: templates
do the same, and guarding against it would need per-message encoding that breaks prefix equality.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from harnessrl.chat.encode import SegmentEncoder
from harnessrl.chat.parse import CALL_CLOSE, CALL_OPEN, THINK_CLOSE, THINK_OPEN, ParsedOutput, parse_text
from harnessrl.chat.probes import probe_conversations, probe_tool_sets
from harnessrl.chat.render import make_direct_renderer
from harnessrl.types import ChatMessage, RequestError, ToolSpec

JsonList = list[dict[str, Any]]
_SYSTEM_ROLES = ("system", "developer")
_SPLICE_MARK = "\u2063harnessrl-splice-point\u2063"
_MARKER = ChatMessage(role="assistant", content=_SPLICE_MARK)
"""Stands in for the assistant turn whose end `suffix_after` looks for (never mutated)."""
_HERMES_HEADER = (
    "# Tools\n\nYou can call the functions described below. Their JSON signatures are listed inside "
    "<tools></tools> tags:\n<tools>"
)
_HERMES_FOOTER = (
    "\n</tools>\n\nTo call a function, answer with a JSON object holding its name and arguments inside "
    "<tool_call></tool_call> tags, one block per call:\n<tool_call>\n"
    '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
)


def tool_spec_json(tool: ToolSpec) -> dict[str, Any]:
    """The OpenAI-style function spec a chat template expects for one tool."""
    params = tool.parameters
    if tool.type == "custom":
        params = {
            "type": "object",
            "properties": {"input": {"type": "string", "description": "Freeform text input."}},
            "required": ["input"],
        }
    return {
        "type": "function",
        "function": {"name": tool.name, "description": tool.description, "parameters": params},
    }


def hermes_tool_block(tools: list[ToolSpec]) -> str:
    """The tool block appended to the system prompt for templates that cannot render tools."""
    lines = "".join("\n" + json.dumps(tool_spec_json(t), ensure_ascii=False) for t in tools)
    return _HERMES_HEADER + lines + _HERMES_FOOTER


def tool_call_text(message: ChatMessage) -> str:
    """Assistant content followed by its tool calls as `<tool_call>` blocks (Qwen3's exact layout)."""
    text = message.content
    for i, call in enumerate(message.tool_calls):
        if i > 0 or text:
            text += "\n"
        body = json.dumps({"name": call.name, "arguments": call.arguments}, ensure_ascii=False)
        text += f"{CALL_OPEN}\n{body}\n{CALL_CLOSE}"
    return text


def token_id(tokenizer: Any, token: str) -> int | None:
    """The id of one whole token, or None if the vocabulary lacks it (a dict lookup, no vocab copy)."""
    tid = tokenizer.convert_tokens_to_ids(token)
    if not isinstance(tid, int) or (tid == tokenizer.unk_token_id and token != tokenizer.unk_token):
        return None
    return tid


class ChatFormat:
    """Renders canonical chats to token ids through a tokenizer's chat template, and parses outputs."""

    def __init__(self, tokenizer: Any, *, enable_thinking: bool = False) -> None:
        template = getattr(tokenizer, "chat_template", None)
        if not isinstance(template, str):
            raise ValueError("the tokenizer has no (single) chat template")
        self.tokenizer = tokenizer
        self.enable_thinking = enable_thinking
        self.native_tools = "tools" in template and "tool_calls" in template
        im_end = token_id(tokenizer, "<|im_end|>")
        eos = token_id(tokenizer, str(tokenizer.eos_token))
        if im_end is None and eos is None:
            raise ValueError("the tokenizer has neither <|im_end|> nor an eos token")
        self.end_text: str = "<|im_end|>" if im_end is not None else str(tokenizer.eos_token)
        stops = [im_end, eos, token_id(tokenizer, "<|endoftext|>")]
        self.stop_token_ids: tuple[int, ...] = tuple(dict.fromkeys(t for t in stops if t is not None))
        """End-of-turn ids: `<|im_end|>`, the eos token and `<|endoftext|>`, those the vocabulary has."""
        self._encoder = SegmentEncoder(tokenizer)
        self._direct = make_direct_renderer(tokenizer)
        self.assistant_start_ids: tuple[int, ...] = tuple(self.encode("<|im_start|>assistant"))
        """Ids that open an assistant turn (the scripted engine counts them)."""

    def warm_up(self) -> None:
        """Do the one-time work now rather than on the first call: compile the template and settle the
        shortcut checks (`direct_render`, `local_suffix`, `bare_suffix`), decode once."""
        _ = self.direct_render, self.bare_suffix
        self.parse(list(self.stop_token_ids))

    # -- encoding --------------------------------------------------------------------------------

    def encode(self, text: str) -> list[int]:
        """Token ids of `text`, special tokens recognised, no BOS/EOS added (`chat.encode` caches pieces)."""
        return self._encoder.encode(text)

    def token_texts(self, ids: list[int]) -> list[str]:
        """The text of each token on its own (a token that is part of a multi-byte character decodes to
        U+FFFD, as in OpenAI's `logprobs.content[].token`)."""
        decode = self.tokenizer.decode
        return [decode([i], skip_special_tokens=False) for i in ids]

    def template_text(self, messages: list[ChatMessage], tools: list[ToolSpec], *, generation: bool) -> str:
        """The chat template's text for `messages` (normalised as the module docstring says).

        Rendered by `chat.render.DirectRenderer` when `direct_render` holds, else by the tokenizer's
        `apply_chat_template`. A template that refuses the conversation (jinja `raise_exception`, e.g.
        "roles must alternate") raises RequestError: the request cannot be rendered, which is the
        client's 400, not a crash.
        """
        from jinja2 import TemplateError

        plain = self._template_messages(messages, tools)
        native = [tool_spec_json(t) for t in tools] if (tools and self.native_tools) else None
        try:
            if plain and self.direct_render:
                assert self._direct is not None
                return self._direct.render(
                    plain, native, generation=generation, enable_thinking=self.enable_thinking
                )
            return self._apply_template(plain, native, generation)
        except TemplateError as exc:
            raise RequestError(f"the chat template rejected the messages: {exc}", param="messages") from exc

    def _apply_template(self, plain: list[dict[str, Any]], native: JsonList | None, gen: bool) -> str:
        think = self.enable_thinking
        text = self.tokenizer.apply_chat_template(
            plain, tools=native, add_generation_prompt=gen, tokenize=False, enable_thinking=think
        )
        return str(text)

    @functools.cached_property
    def direct_render(self) -> bool:
        """Whether `template_text` may render through `chat.render.DirectRenderer` (a third cheaper):
        it could be built, and its text equals `apply_chat_template`'s on every probe conversation, with
        and without tools, with and without the generation prompt. Checked once per format."""
        if self._direct is None:
            return False
        try:
            for msgs in probe_conversations():
                for tools in probe_tool_sets():
                    plain = self._template_messages(msgs, tools)
                    native = [tool_spec_json(t) for t in tools] if (tools and self.native_tools) else None
                    for gen in (True, False):
                        direct = self._direct.render(
                            plain, native, generation=gen, enable_thinking=self.enable_thinking
                        )
                        if direct != self._apply_template(plain, native, gen):
                            return False
        except Exception:  # a template that refuses the probes, or a transformers that differs
            return False
        return True

    def render(self, messages: list[ChatMessage], tools: list[ToolSpec]) -> list[int]:
        """Prompt ids for `messages` and `tools`, ending with the generation prompt."""
        return self.encode(self.template_text(messages, tools, generation=True))

    def count_tokens(self, messages: list[ChatMessage], tools: list[ToolSpec]) -> int:
        """Length of `render(messages, tools)`."""
        return len(self.render(messages, tools))

    def assistant_text(self, message: ChatMessage) -> str:
        """The text a model writes for this turn after the generation prompt, end-of-turn token included.

        Reasoning is written as a `<think>` block only when thinking is enabled (with thinking off the
        generation prompt already holds an empty, closed think block).
        """
        head = ""
        if self.enable_thinking and message.reasoning is not None:
            head = f"{THINK_OPEN}\n{message.reasoning.strip(chr(10))}\n{THINK_CLOSE}\n\n"
        return head + tool_call_text(message) + self.end_text

    def render_assistant(self, message: ChatMessage) -> list[int]:
        """Ids a model emits for this assistant turn, including the end-of-turn token."""
        return self.encode(self.assistant_text(message))

    def parse(self, output_ids: list[int]) -> ParsedOutput:
        """Read output ids back into text, reasoning and tool calls; never raises.

        Decoding stops at the first stop token (which is dropped); other special tokens stay in the text.
        """
        ids = list(output_ids)
        for i, tok in enumerate(ids):
            if tok in self.stop_token_ids:
                ids = ids[:i]
                break
        try:
            text = str(self.tokenizer.decode(ids, skip_special_tokens=False))
        except Exception as exc:  # an id outside the vocabulary must not break the proxy
            return ParsedOutput(text="", reasoning=None, malformed=[f"undecodable output: {exc}"])
        return parse_text(text)

    # -- incremental rendering (used by tito) ------------------------------------------------------

    def suffix_after(
        self, messages: list[ChatMessage], tools: list[ToolSpec], index: int, *, closed: bool
    ) -> list[int] | None:
        """Ids that follow the end of assistant message `index` in `render(messages, tools)`.

        The assistant message is replaced by a marker, the chat is rendered as text (only its tail when
        `local_suffix` holds, see there), and the text after the marker's end-of-turn token is encoded:
        the tokens before it are never re-encoded. With `closed=False` (the recorded output had no end
        token, e.g. cut by max_tokens) the end token is prepended. Returns None when the marker cannot
        be located unambiguously.
        """
        marked = list(messages)
        marked[index] = _MARKER
        if self.local_suffix:
            marked, tools = _tail(marked, index, tools, bare=self.bare_suffix)
        text = self.template_text(marked, tools, generation=True)
        at = text.find(_SPLICE_MARK)
        if at == -1 or text.count(_SPLICE_MARK) != 1:
            return None
        end = text.find(self.end_text, at + len(_SPLICE_MARK))
        if end == -1:
            return None
        rest = text[end + len(self.end_text) :]
        return self.encode(rest if closed else self.end_text + rest)

    @functools.cached_property
    def local_suffix(self) -> bool:
        """Whether this template renders what follows an assistant turn from the tail alone.

        Rendering the whole conversation through jinja on every spliced call costs time linear in its
        length (~4 ms at 8 turns, 50-85 ms at 100). For ChatML templates the text after an assistant
        turn depends only on the system prompt, the last user query before it and the messages after
        it, so `suffix_after` renders just those. Checked once per format, on probe conversations (with
        and without tools), against full renders; any difference (or a template error) keeps full
        rendering.
        """
        return self._tail_agrees(bare=False)

    @functools.cached_property
    def bare_suffix(self) -> bool:
        """Whether the tail of `local_suffix` may also leave out the system prompt and the tools (the
        tools block is most of a short tail's render time); checked like `local_suffix`."""
        return self.local_suffix and self._tail_agrees(bare=True)

    def _tail_agrees(self, *, bare: bool) -> bool:
        """On every probe conversation and tool set, the text after each marked assistant turn is the
        same in the full render and in the `_tail` render."""
        try:
            for msgs in probe_conversations():
                for tools in probe_tool_sets():
                    for i, m in enumerate(msgs):
                        if m.role != "assistant":
                            continue
                        marked = list(msgs)
                        marked[i] = _MARKER
                        full = self.template_text(marked, tools, generation=True)
                        tail = self.template_text(*_tail(marked, i, tools, bare=bare), generation=True)
                        if full[full.index(_SPLICE_MARK) :] != tail[tail.index(_SPLICE_MARK) :]:
                            return False
        except (RequestError, ValueError):
            return False
        return True

    def _template_messages(self, messages: list[ChatMessage], tools: list[ToolSpec]) -> list[dict[str, Any]]:
        system = [m.content for m in messages if m.role in _SYSTEM_ROLES]
        if tools and not self.native_tools:
            system.append(hermes_tool_block(tools))
        out: list[dict[str, Any]] = []
        if system:
            out.append({"role": "system", "content": "\n\n".join(system)})
        for m in messages:
            if m.role in _SYSTEM_ROLES:
                continue
            if m.role == "assistant":
                out.append(self._assistant_dict(m))
            elif m.role == "tool" and self.native_tools:
                out.append({"role": "tool", "content": m.content, "tool_call_id": m.tool_call_id or ""})
            elif m.role == "tool":
                block = f"<tool_response>\n{m.content}\n</tool_response>"
                prev = out[-1] if out else None
                if prev is not None and prev.get("_tool_group"):
                    prev["content"] += "\n" + block
                else:
                    out.append({"role": "user", "content": block, "_tool_group": True})
            else:
                out.append({"role": m.role, "content": m.content})
        for d in out:
            d.pop("_tool_group", None)
        return out

    def _assistant_dict(self, m: ChatMessage) -> dict[str, Any]:
        if not self.native_tools:
            return {"role": "assistant", "content": tool_call_text(m)}
        d: dict[str, Any] = {"role": "assistant", "content": m.content}
        if m.tool_calls:
            d["tool_calls"] = [
                {"type": "function", "id": c.id, "function": {"name": c.name, "arguments": c.arguments}}
                for c in m.tool_calls
            ]
        if self.enable_thinking and m.reasoning is not None:
            d["reasoning_content"] = m.reasoning
        return d


def _tail(
    marked: list[ChatMessage], index: int, tools: list[ToolSpec], *, bare: bool
) -> tuple[list[ChatMessage], list[ToolSpec]]:
    """(messages, tools) to render for the text after `marked[index]`: the system messages (unless
    `bare`), the last user message before `index`, then `marked[index:]`; the tools unless `bare`."""
    users = [m for m in marked[:index] if m.role == "user"]
    if bare:
        return users[-1:] + marked[index:], []
    systems = [m for m in marked[:index] if m.role in _SYSTEM_ROLES]
    return systems + users[-1:] + marked[index:], tools
