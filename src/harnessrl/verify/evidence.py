"""What the rubric judge is shown of a final workspace: one file, or a digest of the whole.

The workspace is the policy's: read it as hostile. Nothing here follows a link it finds (a listed
entry is a folder or a regular file by `lstat`; files are opened with `O_NOFOLLOW | O_NONBLOCK` and
refused unless `fstat` says regular), and everything is bounded: the digest lists at most
`DIGEST_SCAN` entries, `DIGEST_DEPTH` folders deep, shows at most `DIGEST_FILES` files, and reads at
most `EVIDENCE_CHARS` bytes of text plus `BINARY_PROBE` bytes per file it tests for binary. It is
plain blocking file work: `rubric_evidence` runs once per rollout, and the judge calls it in a
thread (95,000 empty files, listed and sorted once per rule on the event loop, stalled the loop
that serves every rollout's model calls for 13.5 s).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from pathlib import Path

from harnessrl.types import RubricRule, safe_relpath

EVIDENCE_CHARS = 30_000
"""Most characters of evidence in one judge request."""
DIGEST_FILES = 200
"""Most files a digest lists (the first ones in path order)."""
DIGEST_SCAN = 100_000
"""Most folder entries a digest looks at (the sandbox's own cap on files is 100,000)."""
DIGEST_DEPTH = 64
"""Deepest folder a digest enters (copies of a final workspace stop there too)."""
BINARY_PROBE = 4096
"""Bytes read from the start of a file to tell binary (a NUL byte) from text."""

Evidence = tuple[str | None, str | None]
"""(evidence text, None), or (None, why the rule scores 0 without asking the judge)."""


def read_regular(path: Path, limit: int) -> bytes | None:
    """At most `limit` bytes of `path` if it is a regular file, opened without following a link at its
    last component and without blocking (a FIFO); None when it is anything else or cannot be read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks: list[bytes] = []
        left = limit
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 16))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def shown(rel: str) -> str:
    """A workspace path as text a judge request can carry: bytes that are not UTF-8 (the agent names
    its files) shown as escapes, not left as surrogates that no encoder takes."""
    return rel.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _listing(folder: Path, room: int) -> tuple[list[tuple[str, bool]], int]:
    """(name, is a folder) of the folders and regular files in `folder` by `lstat` (links and special
    files left out), looking at no more than `room` entries; -> (entries, entries looked at)."""
    entries: list[tuple[str, bool]] = []
    seen = 0
    try:
        with os.scandir(folder) as it:
            for entry in it:
                seen += 1
                if seen > room:
                    break
                if entry.is_dir(follow_symlinks=False):
                    entries.append((entry.name, True))
                elif entry.is_file(follow_symlinks=False):
                    entries.append((entry.name, False))
    except OSError:
        pass
    return entries, seen


def digest_files(root: Path) -> tuple[list[str], bool]:
    """The first `DIGEST_FILES` regular files under `root` in path order (the order of
    `sorted(root.rglob("*"))`: a depth-first walk, each folder's entries sorted), as relative paths;
    and whether the walk stopped at a bound before it had seen everything."""
    files: list[str] = []
    stack: list[tuple[str, bool]] = [("", True)]
    scanned, cut = 0, False
    while stack and len(files) < DIGEST_FILES:
        rel, is_dir = stack.pop()
        if not is_dir:
            files.append(rel)
            continue
        if scanned >= DIGEST_SCAN or (rel.count("/") + 1 if rel else 0) >= DIGEST_DEPTH:
            cut = True
            continue
        entries, seen = _listing(root / rel if rel else root, DIGEST_SCAN - scanned)
        scanned += seen
        stack.extend((f"{rel}/{name}" if rel else name, d) for name, d in sorted(entries, reverse=True))
    return files, cut or bool(stack)


def workspace_digest(workspace: Path, limit: int = EVIDENCE_CHARS) -> str:
    """File list plus the text of the first files (binary files listed only), at most `limit` chars."""
    files, cut = digest_files(workspace)
    parts = ["Files in the workspace:", *(f"- {shown(f)}" for f in files)]
    if cut:
        parts.append(f"- ... (only the first {len(files)} files are listed)")
    budget = limit - sum(len(p) + 1 for p in parts)
    for rel in files:
        if budget <= 0:
            break
        data = read_regular(workspace / rel, max(budget, BINARY_PROBE))
        if data is None or b"\x00" in data[:BINARY_PROBE]:
            continue
        body = data[:budget].decode("utf-8", errors="replace")
        parts.append(f"\n=== {shown(rel)} ===\n{body}")
        budget -= len(body) + 10
    return "\n".join(parts)[:limit]


def file_evidence(rule_path: str, workspace: Path) -> Evidence:
    """The text of one workspace file a rule names (a link is followed only while it stays inside
    the workspace; the file itself must be regular)."""
    try:
        target = (workspace / safe_relpath(rule_path)).resolve()
    except (ValueError, OSError, RuntimeError) as e:  # RuntimeError: a loop of links
        return None, str(e)
    if not target.is_relative_to(workspace.resolve()):
        return None, f"file {rule_path!r} is missing"
    data = read_regular(target, EVIDENCE_CHARS)
    if data is None:
        return None, f"file {rule_path!r} is missing"
    return f"Content of {rule_path}:\n{data.decode('utf-8', errors='replace')}", None


def rubric_evidence(rules: Sequence[RubricRule], workspace: Path) -> list[Evidence]:
    """Evidence for each rule: its file, or the workspace digest (made once, for every rule without a
    `file_path`). Blocking file work: call it in a thread."""
    digest: str | None = None
    out: list[Evidence] = []
    for rule in rules:
        if rule.file_path is not None:
            out.append(file_evidence(rule.file_path, workspace))
            continue
        if digest is None:
            digest = workspace_digest(workspace)
        out.append((digest, None))
    return out
