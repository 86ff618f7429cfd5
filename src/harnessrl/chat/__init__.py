"""Chat formats (messages + tools <-> token ids) and token-in-token-out splicing."""

from harnessrl.chat.format import ChatFormat
from harnessrl.chat.parse import ParsedOutput, parse_text
from harnessrl.chat.tito import Prompt, Turn, build_prompt, find_turn, messages_match

__all__ = [
    "ChatFormat",
    "ParsedOutput",
    "Prompt",
    "Turn",
    "build_prompt",
    "find_turn",
    "messages_match",
    "parse_text",
]
