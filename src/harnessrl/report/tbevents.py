"""TensorBoard scalar event files, written with the standard library only.

    tb = EventWriter(run_dir / "tb")
    tb.scalars(step, {"reward/mean": 0.5, "pass_rate": 0.25})
    # tensorboard --logdir runs/demo/tb

Why not `torch.utils.tensorboard.SummaryWriter`: it imports the `tensorboard` package, which pulls
grpcio, protobuf, werkzeug, markdown and absl (~160 MB installed, ~30 s from PyPI here) just to write a
few floats. The file format is small and stable, so it is written here directly: TFRecord framing
(`uint64 length`, masked CRC-32C of the length, the bytes, masked CRC-32C of the bytes) around
`tensorflow.Event` protobufs, hand-encoded: `wall_time` (1, double), `step` (2, int64),
`file_version` (3, string, first event only: "brain.Event:2") and `summary` (5) holding one
`Summary.Value` per scalar: `tag` (1, string), `simple_value` (2, float); or per text (the config, an
eval table as markdown: TensorBoard's Text tab): `tag` (1), `metadata` (9: `plugin_data` (1) with
`plugin_name` (1) "text") and `tensor` (8: `dtype` (1) DT_STRING = 7, an empty `tensor_shape` (2),
the UTF-8 text as `string_val` (8)). Viewing still needs
`pip install tensorboard`; `read_scalars` reads the files back (tests check it against TensorBoard's
own reader where that is installed).
"""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Iterator, Mapping
from pathlib import Path


def _crc32c_table() -> list[int]:
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _crc32c_table()


def crc32c(data: bytes) -> int:
    """CRC-32C (Castagnoli), as TFRecord uses it."""
    crc = 0xFFFFFFFF
    for b in data:
        crc = _TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked_crc(data: bytes) -> int:
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def _varint(n: int) -> bytes:
    out = bytearray()
    n &= (1 << 64) - 1  # int64 two's complement, as protobuf encodes negative varints
    while True:
        low, n = n & 0x7F, n >> 7
        out.append(low | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field_bytes(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _text_value(tag: str, text: str) -> bytes:
    """A `Summary.Value` of TensorBoard's text plugin (module docstring)."""
    meta = _field_bytes(1, _field_bytes(1, b"text"))
    tensor = b"\x08\x07" + _field_bytes(2, b"") + _field_bytes(8, text.encode())
    return _field_bytes(1, tag.encode()) + _field_bytes(9, meta) + _field_bytes(8, tensor)


def encode_event(
    wall_time: float,
    step: int,
    values: Mapping[str, float] | None = None,
    version: str = "",
    texts: Mapping[str, str] | None = None,
) -> bytes:
    """One serialized `Event` (fields in the module docstring)."""
    out = b"\x09" + struct.pack("<d", wall_time) + b"\x10" + _varint(step)
    if version:
        out += _field_bytes(3, version.encode())
    if values or texts:
        summary = b"".join(
            _field_bytes(1, _field_bytes(1, tag.encode()) + b"\x15" + struct.pack("<f", float(v)))
            for tag, v in (values or {}).items()
        )
        summary += b"".join(_field_bytes(1, _text_value(tag, t)) for tag, t in (texts or {}).items())
        out += _field_bytes(5, summary)
    return out


def frame(record: bytes) -> bytes:
    """TFRecord framing of one record."""
    length = struct.pack("<Q", len(record))
    return length + struct.pack("<I", masked_crc(length)) + record + struct.pack("<I", masked_crc(record))


class EventWriter:
    """Appends scalar events to one `events.out.tfevents.<time>.<host>.harnessrl` file under `logdir`
    (created with its version event on the first write; each write opens, appends and closes)."""

    def __init__(self, logdir: str | Path) -> None:
        self.logdir = Path(logdir)
        self.path = self.logdir / f"events.out.tfevents.{int(time.time())}.{socket.gethostname()}.harnessrl"

    def scalars(self, step: int, values: Mapping[str, float], wall_time: float | None = None) -> None:
        """One event holding every (tag, value) of this step (NaN values are left out)."""
        finite = {k: float(v) for k, v in values.items() if v == v}
        self._append(step, wall_time, finite, {})

    def text(self, step: int, texts: Mapping[str, str], wall_time: float | None = None) -> None:
        """One event holding markdown texts by tag (TensorBoard's Text tab: config, tables)."""
        self._append(step, wall_time, {}, texts)

    def _append(
        self, step: int, wall_time: float | None, values: Mapping[str, float], texts: Mapping[str, str]
    ) -> None:
        now = time.time() if wall_time is None else wall_time
        data = b""
        if not self.path.exists():
            self.logdir.mkdir(parents=True, exist_ok=True)
            data = frame(encode_event(now, 0, version="brain.Event:2"))
        data += frame(encode_event(now, step, values, texts=texts))
        with self.path.open("ab") as f:
            f.write(data)


# -- reading back (tests, `harnessrl report` does not need it) ------------------------------------


def _read_varint(buf: bytes, i: int) -> tuple[int, int]:
    shift = n = 0
    while True:
        b = buf[i]
        i += 1
        n |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return n, i


def _fields(buf: bytes) -> Iterator[tuple[int, int | float | bytes]]:
    """(field number, value) of a protobuf message: varints as int, fixed64 as double, fixed32 as
    float, length-delimited as bytes."""
    i = 0
    while i < len(buf):
        key, i = _read_varint(buf, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _read_varint(buf, i)
            yield number, value
        elif wire == 1:
            yield number, struct.unpack_from("<d", buf, i)[0]
            i += 8
        elif wire == 5:
            yield number, struct.unpack_from("<f", buf, i)[0]
            i += 4
        elif wire == 2:
            size, i = _read_varint(buf, i)
            yield number, buf[i : i + size]
            i += size
        else:
            raise ValueError(f"unsupported wire type {wire}")


def read_records(path: str | Path) -> Iterator[bytes]:
    """The records of a TFRecord file; ValueError on a bad checksum."""
    data = Path(path).read_bytes()
    i = 0
    while i < len(data):
        head = data[i : i + 8]
        (length,) = struct.unpack("<Q", head)
        if struct.unpack_from("<I", data, i + 8)[0] != masked_crc(head):
            raise ValueError(f"{path}: bad length checksum at byte {i}")
        record = data[i + 12 : i + 12 + length]
        if struct.unpack_from("<I", data, i + 12 + length)[0] != masked_crc(record):
            raise ValueError(f"{path}: bad record checksum at byte {i}")
        yield record
        i += 16 + length


def _values(path: str | Path) -> Iterator[tuple[int, dict[int, int | float | bytes]]]:
    """(step, fields of one `Summary.Value`) of every value of an event file."""
    for record in read_records(path):
        fields = list(_fields(record))
        step = next((int(v) for n, v in fields if n == 2 and isinstance(v, int)), 0)
        for n, summary in fields:
            if n != 5 or not isinstance(summary, bytes):
                continue
            for _, value in _fields(summary):
                assert isinstance(value, bytes)
                yield step, dict(_fields(value))


def read_scalars(path: str | Path) -> dict[str, list[tuple[int, float]]]:
    """tag -> [(step, value), ...] of the scalars of an event file."""
    out: dict[str, list[tuple[int, float]]] = {}
    for step, parts in _values(path):
        tag = parts[1]
        assert isinstance(tag, bytes)
        if 8 not in parts:  # not a text (tensor) value
            out.setdefault(tag.decode(), []).append((step, float(parts.get(2, 0.0))))
    return out


def read_texts(path: str | Path) -> dict[str, list[tuple[int, str]]]:
    """tag -> [(step, text), ...] of the texts of an event file."""
    out: dict[str, list[tuple[int, str]]] = {}
    for step, parts in _values(path):
        tag, tensor = parts[1], parts.get(8)
        if isinstance(tag, bytes) and isinstance(tensor, bytes):
            text = dict(_fields(tensor)).get(8, b"")
            assert isinstance(text, bytes)
            out.setdefault(tag.decode(), []).append((step, text.decode()))
    return out
