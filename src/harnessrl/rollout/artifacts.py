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
/etc/shadow or /proc/self/mem is read) and stops after `MAX_DIFF_FILES` files and `MAX_DIFF_BYTES`
of output.
"""

from __future__ import annotations

import difflib
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


def workspace_diff(initial: Path, final: Path) -> str:
    """Unified diff of every changed, added or removed regular file between two folders (bounded)."""
    a, b = _files(initial), _files(final)
    out: list[str] = []
    size = 0
    for rel in sorted(a.keys() | b.keys()):
        if size > MAX_DIFF_BYTES:
            out.append(f"[... diff cut by harnessrl at {MAX_DIFF_BYTES} bytes ...]\n")
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
        chunk = list(difflib.unified_diff(la, lb, src, dst))
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
