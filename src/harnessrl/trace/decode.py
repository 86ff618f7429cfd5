"""Which tokenizer decodes a rollout's ids: the one its calls recorded, or a `--tokenizer` that matches it.

Every ModelCall records where its tokenizer loads from (`tokenizer`: `qwen3` or a folder holding
`tokenizer.json`) and a fingerprint of its vocabulary (`tokenizer_digest`, `chat.tokenizers.
vocab_digest`). `choose_decoder` decides, and says why in `notes` (printed on stderr):

- no `--tokenizer`: decode with the recorded one; if none is recorded (older records), if it cannot be
  loaded here (another machine's folder), or if it loads with another digest, show token ids and say so;
- `--tokenizer X`: decode with X, unless the calls recorded a different digest: then `TokenizerMismatch`
  (decoding SmolLM2 ids with Qwen3 shows fluent garbage, which is worse than ids);
- `ids_only`: never decode.

Loading uses the `tokenizers` library only (no torch, no transformers).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from harnessrl.trace.load import TraceInputError
from harnessrl.types import ModelCall

Decode = Callable[[list[int]], str]


class TokenizerMismatch(TraceInputError):
    """The tokenizer asked for is not the one that produced the rollout's ids."""


@dataclass
class Decoder:
    """A loaded tokenizer: its decode function, where it came from and its vocabulary digest."""

    decode: Decode
    spec: str
    digest: str


@dataclass
class Choice:
    """What `choose_decoder` picked (None: show ids) and the notes explaining it."""

    decoder: Decoder | None
    notes: list[str] = field(default_factory=list)


def tokenizer_file(spec: str) -> Path:
    """The tokenizer.json behind a spec: `qwen3`, a tokenizer.json path, or a folder holding one."""
    if spec == "qwen3":
        from harnessrl.chat.tokenizers import qwen3_tokenizer_dir

        return qwen3_tokenizer_dir() / "tokenizer.json"
    path = Path(spec).expanduser()
    return path / "tokenizer.json" if path.is_dir() else path


@lru_cache(maxsize=8)
def load_tokenizer(spec: str) -> Decoder:
    """A Decoder from a spec (see `tokenizer_file`), loaded once per process; TraceInputError when
    there is no such file."""
    from tokenizers import Tokenizer

    from harnessrl.chat.tokenizers import vocab_digest

    path = tokenizer_file(spec)
    if not path.is_file():
        raise TraceInputError(f"{path}: no tokenizer.json")
    tok = Tokenizer.from_file(str(path))

    def decode(ids: list[int]) -> str:
        return str(tok.decode(ids, skip_special_tokens=False))

    digest = vocab_digest(tok.get_vocab_size(with_added_tokens=True), tok.id_to_token)
    return Decoder(decode, spec, digest)


def recorded(calls: Sequence[ModelCall]) -> dict[str, str]:
    """digest -> tokenizer spec, over the calls that recorded one."""
    return {c.tokenizer_digest: c.tokenizer for c in calls if c.tokenizer_digest}


def choose_decoder(calls: Sequence[ModelCall], spec: str | None, ids_only: bool = False) -> Choice:
    """Pick the decoder for these calls (module docstring); raises TokenizerMismatch or TraceInputError."""
    if ids_only:
        return Choice(None)
    seen = recorded(calls)
    if spec is not None:
        dec = load_tokenizer(spec)
        if seen and dec.digest not in seen:
            (digest, where), *_ = seen.items()
            raise TokenizerMismatch(
                f"--tokenizer {spec} (vocabulary digest {dec.digest}) is not the tokenizer these ids were "
                f"made with ({where or 'unknown location'}, digest {digest}); decoding would show wrong "
                "text. Leave out --tokenizer to decode with the recorded one, or pass --ids."
            )
        return Choice(dec)
    if not seen:
        return Choice(None, ["note: the calls record no tokenizer; showing token ids (pass --tokenizer)"])
    if len(seen) > 1:
        return Choice(None, [f"note: the calls were made with {len(seen)} tokenizers; showing token ids"])
    (digest, where), *_ = seen.items()
    if not where:
        return Choice(None, ["note: the calls record no tokenizer location; showing token ids"])
    try:
        found = load_tokenizer(where)
    except (TraceInputError, FileNotFoundError, OSError, ValueError) as e:
        return Choice(None, [f"note: recorded tokenizer {where} cannot be loaded here ({e}); showing ids"])
    if found.digest != digest:
        why = f"{where} now has vocabulary digest {found.digest}, not the recorded {digest}"
        return Choice(None, [f"note: {why}; showing ids"])
    return Choice(found)
