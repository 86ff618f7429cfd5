"""Segments: which calls are the main trajectory, which a compaction, which a sub-agent, and how they link.

    segments = find_segments(trie, records, calls)   # after classification, in time order

From the recorded traffic alone (token ids, the order of arrival, the parsed tool calls):

- **main**: the main thread's calls (`classify.py`). A new main segment starts at each restart of
  kind `compacted` (the thread dropped its earlier turns); its `parent` is the compaction whose
  summary it ran on, or, after a restart with no summary request (a harness that rewrote its
  history), the main segment before it.
- **compaction**: the summary requests between two main-thread calls (a retried request stays in the
  same segment). `origin_call` is the main-thread call whose context the summary replaced (the last
  one before the request), `answer_call` the first main-thread call after it (the first step that ran
  on the summary), `used` whether that call's prompt carries the summary's ids (`carries`).
- **subagent**: one instance of a sub-agent. Calls of the sub-agent kind (another system prompt, tool
  set or model) are split into instances by context: a call continues the instance of the earlier
  sub-agent call of its group it shares the most tokens with when it holds that call's whole
  sequence, or its whole prompt and is a retry of that state (same prompt length), or its prompt
  carries that call's output re-rendered (`carries`: the proxy could not splice it); otherwise it
  starts an instance. A main-group thread that
  does not extend the main trajectory and that the main thread later came back from (a later main
  call continues a main call from before the thread began) is a sub-agent too, one with the main
  thread's own configuration (`nested_threads`). `origin_call` is the last delivered main-thread call
  with tool calls before the instance's first call, `tool_call` the k-th of its tool calls for the
  k-th instance started after it (instances start in the order of the calls, as harnesses run them),
  `answer_call` the first main-thread call after the instance's last call and `used` whether a later
  main-thread prompt or summary request carries the instance's final answer (a summary request is
  the main thread's context sent to be summarised: a harness that compacts as soon as the answer
  lands passes it on only through the summary).

Left out: a sub-agent started by another sub-agent is linked to the main-thread call before it; the
order rule for parallel tool calls fails for a harness that starts them out of order.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence

from harnessrl.trace.classify import find_ids
from harnessrl.trace.tree import Segment, TraceCall
from harnessrl.trace.trie import PrefixTrie
from harnessrl.types import ModelCall

_THREAD = ("main", "compacted")

WINDOW = 8
"""Tokens per window when an answer is looked for in a later prompt (`carries`)."""


def _find(hay: bytes, needle: Sequence[int]) -> bool:
    return find_ids(hay, array("q", needle).tobytes())


def carries(prompt: Sequence[int], answer: Sequence[int]) -> bool:
    """Whether `prompt` holds the text of `answer` (a model output), re-tokenized or spliced.

    The output's last id (the end-of-turn token) and, past two ids, its first (it can merge with
    what precedes it once the text sits inside a tool result) are left out; the rest must occur
    whole when it is at most `WINDOW` ids long, else at least half of its consecutive
    `WINDOW`-id windows must (tokenizing the same text elsewhere changes ids only at its edges).
    A one-word answer is found wherever that word's id occurs."""
    core = list(answer[:-1]) if len(answer) > 1 else list(answer)
    if len(core) > 2:
        core = core[1:]
    if not core or not prompt:
        return False
    hay = array("q", prompt).tobytes()
    if len(core) <= WINDOW:
        return _find(hay, core)
    windows = [core[k : k + WINDOW] for k in range(0, len(core) - WINDOW + 1, WINDOW)]
    return 2 * sum(_find(hay, w) for w in windows) >= len(windows)


def nested_threads(calls: list[TraceCall]) -> None:
    """Re-kind as `subagent` each main-group thread the main thread came back from (module doc)."""
    root: dict[int, int] = {}
    for i, c in enumerate(calls):
        if c.kind in _THREAD:
            root[i] = i if c.forks else root.get(c.extends, c.extends)
    starts = [i for i, r in root.items() if r == i]
    nested: set[int] = set()
    for i, c in enumerate(calls):
        if i in root and not c.forks:
            nested.update(r for r in starts if c.extends < r < i and root[i] != r)
    for i, r in root.items():
        if r in nested:
            calls[i].kind = "subagent"


def _instances(trie: PrefixTrie, records: list[ModelCall], calls: list[TraceCall]) -> dict[int, int]:
    """Sub-agent call index -> index of the first call of its instance (module doc)."""
    latest: dict[tuple[str, int], int] = {}
    first: dict[int, int] = {}
    for j, c in enumerate(calls):
        if c.kind != "subagent":
            continue
        first[j] = j
        end = trie.call_end.get(j)
        node = end
        while node is not None and node.nid >= 0:
            prev = latest.get((c.group, node.nid), -1)
            if prev >= 0:
                p = calls[prev]
                shared = node.end if node is not end else c.prompt_len + c.output_len
                retry = shared >= p.prompt_len and c.prompt_len == p.prompt_len
                if (
                    shared >= p.prompt_len + p.output_len
                    or retry
                    or carries(records[j].prompt_ids, records[prev].output_ids)
                ):
                    first[j] = first[prev]
                break
            node = node.parent
        node = end
        while node is not None and node.nid >= 0:
            latest[(c.group, node.nid)] = j
            node = node.parent
    return first


class _Builder:
    """Walks the calls in time order and opens or extends segments (module doc)."""

    def __init__(self, records: list[ModelCall], calls: list[TraceCall]) -> None:
        self.records, self.calls = records, calls
        self.segments: list[Segment] = []
        self.main = -1
        """Current main segment."""
        self.last_main = -1
        """Last main-thread call so far."""
        self.spawner = -1
        """Last delivered main-thread call with tool calls."""
        self.pending = -1
        """Compaction segment opened since the last main-thread call."""
        self.spawned: dict[int, int] = {}
        """Instances started so far per spawning call."""

    def open(self, kind: str, parent: int, origin: int = -1) -> Segment:
        seg = Segment(len(self.segments), kind, parent=parent, used=kind == "main")  # type: ignore[arg-type]
        seg.origin_call = self.calls[origin].call_id if origin >= 0 else None
        self.segments.append(seg)
        return seg

    def join(self, seg: Segment, i: int) -> None:
        seg.calls.append(self.calls[i].call_id)
        self.calls[i].segment = seg.segment_id

    def thread_call(self, i: int) -> None:
        c = self.calls[i]
        if self.pending >= 0:
            self.segments[self.pending].answer_call = c.call_id
        if self.main < 0 or (c.kind == "compacted" and c.restart):
            parent = self.pending if self.pending >= 0 else self.main
            self.main = self.open("main", parent).segment_id
        self.join(self.segments[self.main], i)
        self.pending, self.last_main = -1, i
        if c.delivered and self.records[i].tool_calls:
            self.spawner = i

    def compaction(self, i: int) -> None:
        if self.pending < 0:
            self.pending = self.open("compaction", self.main, self.last_main).segment_id
        self.join(self.segments[self.pending], i)

    def subagent(self, i: int, first: int, by_first: dict[int, Segment]) -> None:
        seg = by_first.get(first)
        if seg is None:
            seg = by_first[first] = self.open("subagent", self.main, self.spawner)
            if self.spawner >= 0:
                k = self.spawned.get(self.spawner, 0)
                self.spawned[self.spawner] = k + 1
                tools = self.records[self.spawner].tool_calls
                tc = tools[min(k, len(tools) - 1)]
                seg.tool_call = tc.id or f"{tc.name}#{min(k, len(tools) - 1)}"
        self.join(seg, i)


def _answers(builder: _Builder) -> None:
    """Fill `used` (and a sub-agent's `answer_call`) from the calls after each segment."""
    calls, records = builder.calls, builder.records
    index = {c.call_id: i for i, c in enumerate(calls)}
    thread = [i for i, c in enumerate(calls) if c.kind in _THREAD]
    readers = [i for i, c in enumerate(calls) if c.kind in _THREAD or c.kind == "compaction_request"]
    for seg in builder.segments:
        if seg.kind == "main":
            continue
        members = [index[c] for c in seg.calls]
        final = [j for j in members if calls[j].delivered] or members
        answer = records[final[-1]].output_ids
        later = [i for i in thread if i > members[-1]]
        if seg.kind == "subagent":
            seg.answer_call = calls[later[0]].call_id if later else None
            seg.used = any(carries(records[i].prompt_ids, answer) for i in readers if i > members[-1])
        elif seg.answer_call is not None:
            seg.used = carries(records[index[seg.answer_call]].prompt_ids, answer)


def find_segments(trie: PrefixTrie, records: list[ModelCall], calls: list[TraceCall]) -> list[Segment]:
    """Attribute every call to a segment (sets `TraceCall.segment`) and link the segments."""
    nested_threads(calls)
    first = _instances(trie, records, calls)
    builder = _Builder(records, calls)
    by_first: dict[int, Segment] = {}
    for i, c in enumerate(calls):
        if c.kind in _THREAD:
            builder.thread_call(i)
        elif c.kind == "compaction_request":
            builder.compaction(i)
        elif c.kind == "subagent":
            builder.subagent(i, first[i], by_first)
    _answers(builder)
    return builder.segments
