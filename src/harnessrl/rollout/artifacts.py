"""The on-disk layout of one rollout, written by the runner and read by `tree show`, training, eval.

<rollout_dir>/rollout.json      the Rollout record without its calls (`formats/rollout_dir.py`)
<rollout_dir>/calls.jsonl       one ModelCall per line, in arrival order (`formats/calls.py`)
<rollout_dir>/harness.stdout    what the harness printed (its JSON event stream)
<rollout_dir>/harness.stderr
<rollout_dir>/workspace/        the final workspace
<rollout_dir>/workspace.diff    unified diff initial -> final (text files; binary files named only)
<rollout_dir>/reward.json       reward and the checker's per-metric detail (`formats/rollout_dir.py`)
<rollout_dir>/prompt.json       the first prompt's digest: system prompt, tools (`prompt_check.py`)

The final workspace is the agent's: the diff walks it without following links (`os.walk` plus
`lstat`), reads only regular files through `fscopy.read_bounded` (no FIFO blocks it, no link to
/etc/shadow or /proc/self/mem is read) and stops after `MAX_DIFF_FILES` files, `MAX_DIFF_BYTES`
of output and `MAX_DIFF_SECONDS`; a file whose changes difflib would take too long over gets one
hunk (`file_diff`).
"""

from __future__ import annotations

import difflib
import time
from pathlib import Path

from harnessrl.formats.first_prompt import write_first_prompt
from harnessrl.formats.rollout_dir import read_rollout as read_rollout  # the reader lives beside the writer
from harnessrl.formats.rollout_dir import write_reward, write_rollout
from harnessrl.rollout.prompt_check import first_prompt
from harnessrl.sandbox.fscopy import MAX_DEPTH, read_bounded, walk
from harnessrl.sandbox.spec import ExecResult
from harnessrl.types import Rollout

MAX_DIFF_FILE_BYTES = 1 << 20
MAX_DIFF_FILES = 10_000
MAX_DIFF_BYTES = 16 << 20
MAX_DIFF_CELLS = 4_000_000
"""Largest (changed lines before) x (changed lines after) difflib is given: its matching is
quadratic and worse (10,000 lines with every other one changed took 16 s, 60,000 more than two
minutes, in a thread holding the GIL, with no timeout). Past it, a file's changed middle (after
the lines both versions share at the start and the end) is one hunk: all of it out, all of it in."""
MAX_DIFF_SECONDS = 30.0
"""Wall time after which the remaining files are no longer diffed."""


def _files(root: Path) -> dict[str, Path]:
    """Regular files under `root`, at most MAX_DEPTH folders down (links and special files are not
    followed nor listed)."""
    found: dict[str, Path] = {}
    if not root.is_dir() or root.is_symlink():
        return found
    for rel, depth, entries in walk(root):
        if entries is None:
            continue
        if depth >= MAX_DEPTH:  # its folders are entered no further
            entries[:] = [e for e in entries if not e.is_dir(follow_symlinks=False)]
        for entry in entries:
            try:
                if entry.is_file(follow_symlinks=False):
                    found[f"{rel}/{entry.name}" if rel else entry.name] = Path(entry.path)
            except OSError:
                continue
            if len(found) >= MAX_DIFF_FILES:
                return found
    return found


def _bytes(path: Path | None) -> bytes | None:
    return b"" if path is None else read_bounded(path, MAX_DIFF_FILE_BYTES + 1)


def _text(data: bytes | None) -> list[str] | None:
    """Lines of a text file; None for binary, unreadable or oversized files."""
    if data is None or len(data) > MAX_DIFF_FILE_BYTES or b"\x00" in data:
        return None
    try:
        return data.decode("utf-8").splitlines(keepends=True)
    except UnicodeDecodeError:
        return None


def _range(start: int, length: int) -> str:
    """A unified diff hunk's range (difflib's format): 1-based start, the length unless it is 1."""
    if length == 1:
        return f"{start + 1}"
    return f"{start if length == 0 else start + 1},{length}"


def file_diff(la: list[str], lb: list[str], src: str, dst: str) -> list[str]:
    """difflib's unified diff of two files' lines, or past `MAX_DIFF_CELLS` one hunk replacing the
    changed middle (with up to 3 lines of context), in time linear in the lines."""
    pre = 0
    while pre < min(len(la), len(lb)) and la[pre] == lb[pre]:
        pre += 1
    suf = 0
    while suf < min(len(la), len(lb)) - pre and la[-1 - suf] == lb[-1 - suf]:
        suf += 1
    end_a, end_b = len(la) - suf, len(lb) - suf
    if (end_a - pre) * (end_b - pre) <= MAX_DIFF_CELLS:
        return list(difflib.unified_diff(la, lb, src, dst))
    start, tail = max(0, pre - 3), min(suf, 3)
    hunk = f"@@ -{_range(start, end_a + tail - start)} +{_range(start, end_b + tail - start)} @@\n"
    body = [" " + x for x in la[start:pre]] + ["-" + x for x in la[pre:end_a]]
    body += ["+" + x for x in lb[pre:end_b]] + [" " + x for x in la[end_a : end_a + tail]]
    body = [x if x.endswith("\n") else x + "\n\\ No newline at end of file\n" for x in body]
    return [f"--- {src}\n", f"+++ {dst}\n", hunk, *body]


def workspace_diff(initial: Path, final: Path) -> str:
    """Unified diff of every changed, added or removed regular file between two folders (bounded)."""
    a, b = _files(initial), _files(final)
    out: list[str] = []
    size = 0
    deadline = time.monotonic() + MAX_DIFF_SECONDS
    for rel in sorted(a.keys() | b.keys()):
        if size > MAX_DIFF_BYTES:
            out.append(f"[... diff cut by harnessrl at {MAX_DIFF_BYTES} bytes ...]\n")
            break
        if time.monotonic() > deadline:
            out.append(f"[... diff cut by harnessrl after {MAX_DIFF_SECONDS:g} s ...]\n")
            break
        pa, pb = a.get(rel), b.get(rel)
        da, db = _bytes(pa), _bytes(pb)
        if pa is not None and pb is not None and da == db and da is not None:
            continue
        la, lb = (_text(da) if pa is not None else []), (_text(db) if pb is not None else [])
        if la is None or lb is None:
            out.append(f"Binary file {rel} differs\n")
            continue
        src = f"a/{rel}" if pa is not None else "/dev/null"
        dst = f"b/{rel}" if pb is not None else "/dev/null"
        chunk = file_diff(la, lb, src, dst)
        if chunk and not chunk[-1].endswith("\n"):
            chunk[-1] += "\n\\ No newline at end of file\n"
        out.extend(chunk)
        size += sum(len(line) for line in chunk)
    return "".join(out)


def write_artifacts(
    rdir: Path, rollout: Rollout, raw: ExecResult | None, initial: Path, workspace: Path
) -> None:
    """Write everything but the workspace itself (already in place) for one finished rollout."""
    write_rollout(rdir, rollout)
    (rdir / "harness.stdout").write_text(raw.stdout if raw else "", encoding="utf-8")
    (rdir / "harness.stderr").write_text((raw.stderr or raw.error) if raw else "", encoding="utf-8")
    (rdir / "workspace.diff").write_text(workspace_diff(initial, workspace), encoding="utf-8")
    write_reward(rdir, rollout)
    prompt = first_prompt(rollout)
    if prompt is not None:
        write_first_prompt(rdir, prompt)
