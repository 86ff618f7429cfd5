"""A chat template's text without `apply_chat_template`'s input copying, checked against it.

`tokenizer.apply_chat_template(..., tokenize=False)` first rebuilds everything the template will see:
messages and tools are walked twice (objects -> dicts, dropping None values; then every value copied
into plain JSON types), the reasoning fields are aliased, the special-tokens map is rebuilt; only then
is the (cached) compiled template rendered. `ChatFormat` already hands it fresh plain-JSON dicts, so on
the proxy's hot path (a few messages per spliced call) that copying is a third of the render.

`DirectRenderer.render` calls the very same compiled template (transformers' own sandboxed jinja
environment: the same filters, globals and sandbox rules) with the arguments `apply_chat_template`
passes: `messages`, `tools`, `documents=None`, `add_generation_prompt`, the tokenizer's special tokens
and the extra keyword arguments. It mirrors the two input rewrites that can change what a template
reads (None-valued keys dropped, reasoning aliased as `thinking` / `reasoning_content`).

It reaches into a private transformers function, so it is never trusted blindly: `ChatFormat` uses it
only after its text equals `apply_chat_template`'s on probe conversations (`ChatFormat.direct_render`),
and `make_direct_renderer` returns None when the transformers internals it needs are missing.
"""

from __future__ import annotations

from typing import Any

_REASONING_KEYS = ("reasoning_content", "thinking", "reasoning")


def _internals() -> tuple[Any, Any] | None:
    """transformers' cached template compiler and its plain-data converter, or None if this
    transformers version lacks them."""
    try:
        from transformers.utils.chat_template_utils import _compile_jinja_template, _plain_template_data
    except ImportError:
        return None
    return _compile_jinja_template, _plain_template_data


def _plain_message(message: dict[str, Any]) -> dict[str, Any]:
    """What apply_chat_template makes of one plain-JSON message: None-valued keys dropped, reasoning
    (under any of its names) exposed as `thinking` first and `reasoning_content` last."""
    if any(v is None for v in message.values()):
        message = {k: v for k, v in message.items() if v is not None}
    reasoning = next((message[k] for k in _REASONING_KEYS if message.get(k) is not None), None)
    if reasoning is not None:
        message = {"thinking": reasoning, **message, "reasoning_content": reasoning}
    return message


class DirectRenderer:
    """Renders one tokenizer's chat template from plain-JSON messages and tools (module docstring)."""

    def __init__(self, template: Any, special_tokens: dict[str, Any]) -> None:
        self.template = template
        self.special_tokens = dict(special_tokens)
        """The tokenizer's special tokens as template variables (`bos_token`, `eos_token`, ...), as plain
        strings; read once (a tokenizer's special tokens do not change while it serves)."""

    def render(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        *,
        generation: bool,
        **kwargs: Any,
    ) -> str:
        """The template's text; raises what the template raises (jinja TemplateError on refusal)."""
        variables = {**self.special_tokens, **kwargs}
        return str(
            self.template.render(
                messages=[_plain_message(m) for m in messages],
                tools=tools,
                documents=None,
                add_generation_prompt=generation,
                **variables,
            )
        )


def make_direct_renderer(tokenizer: Any) -> DirectRenderer | None:
    """A DirectRenderer for the tokenizer's (single, string) chat template, or None when it cannot be
    built (no string template, transformers without the compiler, a template that does not compile)."""
    template = getattr(tokenizer, "chat_template", None)
    internals = _internals()
    if not isinstance(template, str) or internals is None:
        return None
    compile_template, plain = internals
    try:
        compiled = compile_template(template)
        special = plain(dict(getattr(tokenizer, "special_tokens_map", {}) or {}))
    except Exception:
        return None
    return DirectRenderer(compiled, special)
