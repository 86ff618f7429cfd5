"""Which thread each call belongs to, and which leaves are alive.

**Main thread.** Calls are grouped by (system digest, tools digest, requested model). The main group
is the group of the rollout's first call that offers the model tools (replays and compaction requests
not counted; `choose_main_group`): the main thread is there before any sub-agent is spawned, however
many calls the sub-agents make or however long one runs (a span rule, the group spanning the most
of the rollout, took a white-box helper that ran past the main thread's last counted call, or was
cut off by the timeout, for the main thread). A tool-less call or thread a harness makes before or
beside its loop (a quota check, titles, next-speaker checks) is passed over. Every other group is a
sub-agent, as is any call tagged `subagent`. It fails for a harness whose first tool-offering call
is not its agent loop's (none of the 23 CLIs' captured traffic has one).

**Compaction.** A call tagged `compaction_request` asks for a summary. A main-group call *restarts*
when it drops model tokens that the main-thread call it shares the longest prefix with had in its
prompt: it no longer extends the conversation, it replaces it (a summary restart, or a harness that
rewrote earlier history, e.g. cleared old tool results). Such a call, and every main-group call that
extends it, is `compacted`. A call that shares nothing with earlier main-thread calls restarts too,
and so does one that does not hold the whole sequence of that call when a summary request came just
before it (Codex restarts from the first call's prompt plus the summary: it drops only that call's
output). Exception: a call the proxy marked `retokenized` (it could not splice the recorded ids) drops model
tokens too, but is an ordinary continuation, so it stays `main` unless a summary request came just
before it. A harness that moves a trailing environment message (OpenClaw) drops no model token, so
it stays `main` and shows as an ordinary branch.

**Dead leaves.** A leaf (a call no other call extends) is alive when it is its thread's final answer
(the last main-group call, the last call of each sub-agent group, every summary), or when a later
call carries its output ids verbatim in its prompt (the output was consumed under a different context,
e.g. the moving tail above). Otherwise nobody consumed it: a server retry, a regeneration, a
format-error retry; it is dead. A sub-agent's final answer reaches the main thread only as tool-result
text, re-tokenized, and several instances of one sub-agent type share a group, so a delivered
sub-agent leaf is also alive unless a later call of its group shares its whole prompt (a retry or
regeneration of that state); that keeps the answers of interleaved instances alive. Left out: a
retried sub-agent call whose prompt was changed by the harness looks like a separate instance.
"""

from __future__ import annotations

from array import array
from collections import Counter
from typing import NamedTuple

from harnessrl.trace.tree import CallKind, TraceCall
from harnessrl.trace.trie import PrefixTrie, TrieNode
from harnessrl.types import ModelCall

THREAD_KINDS: frozenset[str] = frozenset({"main", "compacted", "compaction_request", "subagent"})
"""Kinds whose leaves are judged alive or dead (replays and empty calls never are)."""


def group_key(call: ModelCall) -> str:
    """The key that separates the main thread from sub-agents."""
    return f"{call.system_digest}|{call.tools_digest}|{call.requested_model}"


def choose_main_group(calls: list[ModelCall]) -> str:
    """The main thread's group: the group of the rollout's first call that offers the model tools
    (the harness's agent loop starts first; a tool-less side call or thread it makes before or
    beside it, a title, a quota or a next-speaker check, is passed over), replays and compaction
    requests not counted. Sub-agents start after the main thread, however long they run or however
    many calls they make: a white-box helper that ran past the main thread's last counted call (its
    calls after it were replays), or was cut off by the rollout's timeout, spanned more of the
    rollout, and the old rule (the group spanning the most) made it the main thread. With no call
    offering tools: the group of the earliest call whose group makes two or more; else the latest
    call's."""
    counts: Counter[str] = Counter()
    order: list[str] = []
    for call in calls:
        if call.replay_of is None and "compaction_request" not in call.tags:
            if call.tool_names:
                return group_key(call)
            key = group_key(call)
            counts[key] += 1
            order.append(key)
    if not counts:
        return group_key(calls[0]) if calls else ""
    return next((k for k in order if counts[k] >= 2), order[-1])


def initial_kind(call: ModelCall, main_key: str) -> CallKind:
    """Kind from the record alone; `main` is refined by `thread_kind` once the call is in the trie."""
    if not call.output_ids:
        return "empty"
    if call.replay_of is not None:
        return "replay"
    if "compaction_request" in call.tags:
        return "compaction_request"
    if "subagent" in call.tags or group_key(call) != main_key:
        return "subagent"
    return "main"


class Thread(NamedTuple):
    """What `ThreadTracker.classify` finds for one main-group call."""

    kind: CallKind
    restart: bool
    """It starts a new segment (see `classify`)."""
    extends: int
    """Index of the main-thread call it shares the longest prefix with (-1: none)."""
    forks: bool
    """It does not hold that call's whole sequence (prompt and output): a new branch."""


class ThreadTracker:
    """Classifies main-group calls as `main` or `compacted` as they are inserted, in time order."""

    def __init__(self) -> None:
        self.seen_thread = False
        """An earlier call was already main or compacted."""
        self.pending_compaction = False
        """A summary request arrived since the last main-thread call."""

    def note(self, kind: CallKind) -> None:
        """Record a call that is not a main-group call (only summary requests matter)."""
        if kind == "compaction_request":
            self.pending_compaction = True

    def classify(
        self, trie: PrefixTrie, path: list[TrieNode], calls: list[TraceCall], index: int, render: str
    ) -> Thread:
        """Kind, restart and thread links (`Thread`) of main-group call `index`, inserted along `path`.

        `calls` are the calls before it. A new segment starts when the call drops model tokens of the
        main-thread call it shares the longest prefix with, or shares nothing with any; a `retokenized`
        call starts one whenever it does not extend that call (its history held that call's output,
        re-rendered). It is
        `compacted` unless it is a `retokenized` call with no summary request since the last
        main-thread call: then the proxy failed to splice an ordinary continuation, which stays on its
        thread as a new branch. Either way the main-thread call before it ends its segment alive.
        """
        x = -1
        depth = 0
        for node in reversed(path):
            if node.thread_call >= 0:
                x = node.thread_call
                depth = node.start + len(node.tokens)
                break
        kind: CallKind = "main"
        if x < 0:
            new_segment = self.seen_thread
        else:
            prev = calls[x]
            kind = prev.kind
            if render == "retokenized":
                new_segment = depth < prev.prompt_len + prev.output_len
            else:
                new_segment = (
                    depth < prev.prompt_len and trie.model_count(trie.call_end[x], depth, prev.prompt_len) > 0
                )
        forks = x < 0 or depth < calls[x].prompt_len + calls[x].output_len
        new_segment = new_segment or (forks and self.pending_compaction)
        if new_segment and (render != "retokenized" or self.pending_compaction):
            kind = "compacted"
        for node in path:
            node.thread_call = index
        self.seen_thread = True
        self.pending_compaction = False
        return Thread(kind, new_segment, x, forks)


def final_calls(calls: list[TraceCall]) -> set[int]:
    """Indices of the calls whose output is a thread's final answer (never dead): the last main-thread
    call, the last main-thread call before each new segment, the last call of each sub-agent group and
    every summary request. Only delivered outputs count: one the harness never received answers nothing."""
    final: set[int] = set()
    last_main = -1
    last_sub: dict[str, int] = {}
    for i, c in enumerate(calls):
        if c.restart and last_main >= 0:
            final.add(last_main)
        if not c.delivered:
            continue
        if c.kind in ("main", "compacted"):
            last_main = i
        elif c.kind == "subagent":
            last_sub[c.group] = i
        elif c.kind == "compaction_request":
            final.add(i)
    if last_main >= 0:
        final.add(last_main)
    final.update(last_sub.values())
    return final


class _Consumption:
    """Answers "does a later call's prompt contain this call's output ids verbatim?" with bytes.find.

    Only the part of each later prompt that was new to the tree when it arrived is searched (plus an
    overlap of len(output) - 1): tokens it shared with earlier calls were either searched in those
    calls already or predate the output. This keeps the check proportional to the environment tokens
    a harness adds, not to whole prompts.
    """

    def __init__(self, records: list[ModelCall], calls: list[TraceCall]) -> None:
        self._records = records
        self._calls = calls

    def consumed_later(self, i: int) -> bool:
        out = self._records[i].output_ids
        if not out:
            return False
        needle = array("q", out).tobytes()
        for j in range(i + 1, len(self._records)):
            prompt = self._records[j].prompt_ids
            lo = max(self._calls[j].matched - len(out) + 1, 0)
            if len(prompt) - lo < len(out):
                continue
            if find_ids(array("q", prompt[lo:]).tobytes(), needle):
                return True
        return False


def find_ids(hay: bytes, needle: bytes) -> bool:
    """Whether int64 ids `needle` (bytes) occur in `hay` (int64 bytes) at a token boundary."""
    pos = hay.find(needle)
    while pos >= 0:
        if pos % 8 == 0:
            return True
        pos = hay.find(needle, pos + 1)
    return False


def superseded(trie: PrefixTrie, calls: list[TraceCall], j: int) -> bool:
    """Whether a later call of call j's group shares all of j's prompt (it regenerated j's output)."""
    plen = calls[j].prompt_len
    anchor = trie.call_end.get(j)
    if anchor is None or plen == 0:
        return False
    while anchor.start > plen - 1 and anchor.parent is not None:
        anchor = anchor.parent  # the node holding j's last prompt token
    for k in range(j + 1, len(calls)):
        if calls[k].group != calls[j].group or calls[k].kind != calls[j].kind:
            continue
        node = trie.call_end.get(k)
        while node is not None and node.end > anchor.start:
            if node is anchor:
                return True
            node = node.parent
    return False


def _alive(
    trie: PrefixTrie, calls: list[TraceCall], judged: list[int], final: set[int], used: _Consumption
) -> bool:
    if any(j in final for j in judged):
        return True
    if any(
        calls[j].kind == "subagent" and calls[j].delivered and not superseded(trie, calls, j) for j in judged
    ):
        return True
    return any(used.consumed_later(j) for j in judged)


def mark_leaves(trie: PrefixTrie, records: list[ModelCall], calls: list[TraceCall]) -> list[TrieNode]:
    """Set `leaf` and `dead` on every call; return the dead leaf nodes.

    Liveness belongs to the leaf node: identical calls ending there share it, so a retry that
    reproduced the final answer token for token is not a dead leaf.
    """
    final = final_calls(calls)
    consumption = _Consumption(records, calls)
    dead_nodes: list[TrieNode] = []
    for i, call in enumerate(calls):
        node = trie.call_end.get(i)
        if node is None or node.children or call.leaf:
            continue
        ends = node.ends
        for j in ends:
            calls[j].leaf = True
        judged = [j for j in ends if calls[j].kind in THREAD_KINDS]
        if not judged:
            continue
        if not _alive(trie, calls, judged, final, consumption):
            dead_nodes.append(node)
            for j in judged:
                calls[j].dead = True
    return dead_nodes
