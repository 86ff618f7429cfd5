"""Render a TraceTree as indented text or as a self-contained HTML page.

Both views indent only at branch points: a node with a single child is followed by that child at
the same level, so a 100-call chain stays readable. Each node shows its kind (that of the call that
created it), token counts (environment / model), kept or dropped with the reason, and the calls
ending there; then each call, and (when there is more than the main trajectory) each segment with
the links between them: the call a summary replaced and the call that resumed on it, the tool call
that started a sub-agent and the call its answer came back in. Text is decoded only when a `decode`
function is given (`trace.decode`: the tokenizer the calls recorded); otherwise token ids are shown.
The HTML page needs no script and no network: nodes and long segments are `<details>` elements,
coloured by kind.
"""

from __future__ import annotations

import html
from collections.abc import Iterator, Sequence

from harnessrl.trace.decode import Decode
from harnessrl.trace.tree import TraceNode, TraceTree
from harnessrl.types import ModelCall


def segments(node: TraceNode) -> list[tuple[bool, list[int]]]:
    """The node's tokens as runs of (is_model, ids)."""
    out: list[tuple[bool, list[int]]] = []
    for tok, is_model in zip(node.tokens, node.model_mask, strict=True):
        if out and out[-1][0] == is_model:
            out[-1][1].append(tok)
        else:
            out.append((is_model, [tok]))
    return out


def _walk(tree: TraceTree) -> Iterator[tuple[int, str, TraceNode]]:
    """(indent level, event, node) in display order; events: open (a branch starts), node, close."""
    stack: list[tuple[str, int, int]] = [("node", r, 0) for r in reversed(tree.roots)]
    if len(tree.roots) > 1:
        stack = [x for r in reversed(tree.roots) for x in (("close", r, 1), ("node", r, 1), ("open", r, 1))]
    while stack:
        event, nid, level = stack.pop()
        node = tree.nodes[nid]
        yield level, event, node
        if event != "node":
            continue
        kids = node.children
        if len(kids) == 1:
            stack.append(("node", kids[0], level))
        else:
            for c in reversed(kids):
                stack.extend((("close", c, level + 1), ("node", c, level + 1), ("open", c, level + 1)))


def _kinds(tree: TraceTree) -> dict[str, str]:
    """call_id -> kind, to label each node with the kind of the call that created it."""
    return {c.call_id: c.kind for c in tree.calls}


def _status(node: TraceNode) -> str:
    return "kept" if node.kept else f"DROPPED {node.drop_reason}"


def _counts(node: TraceNode) -> str:
    model = sum(node.model_mask)
    return f"{len(node.tokens)} tok (env {len(node.tokens) - model}, model {model})"


def _preview(ids: list[int], decode: Decode | None, width: int) -> str:
    if decode is None:
        shown = " ".join(map(str, ids[:8]))
        return f"[{shown}{' ...' if len(ids) > 8 else ''}]"
    text = decode(ids)
    return repr(text if len(text) <= width else text[: width - 3] + "...")


def summary_lines(tree: TraceTree) -> list[str]:
    """Header lines: rollout, reward, filter, leaves and the three token counts."""
    s = tree.stats
    filt = f"  FILTERED: {tree.filter_reason}" if tree.filter_reason else ""
    over = s.get("over_branching_dropped", 0)
    over_text = f"  over-branching dropped {over}" if over else ""
    return [
        f"rollout {tree.rollout_id}  reward {tree.reward}  calls {s['calls']} {s['calls_by_kind']}{filt}",
        f"nodes {s['nodes']} (kept {s['kept_nodes']})  live leaves {s['live_leaves']}  dead leaves "
        f"{s['dead_leaves']}{over_text}  retokenized {s['retokenized']}"
        f"  merged duplicates {s['merged_duplicates']}",
        f"tokens: per-call {s['tokens_per_call']}  paths {s['tokens_paths']}  unique {s['tokens_unique']}"
        f"  (per-call/unique {s['ratio_per_call_to_unique']:.2f},"
        f" paths/unique {s['ratio_paths_to_unique']:.2f})",
    ]


def segment_lines(tree: TraceTree) -> list[str]:
    """One line per segment with its calls, end nodes and links (none when all is main trajectory)."""
    if len(tree.segments) < 2 and all(s.kind == "main" for s in tree.segments):
        return []
    node_of = {c.call_id: c.end_node for c in tree.calls}
    out = []
    for seg in tree.segments:
        nodes = ",".join(f"#{node_of[c]}" for c in seg.calls if node_of.get(c, -1) >= 0)
        line = f"  S{seg.segment_id} {seg.kind}  calls {','.join(seg.calls)}  nodes {nodes or '-'}"
        used = "used" if seg.used else "NOT used"
        answer = f"{seg.answer_call} ({used})" if seg.answer_call else "nothing (the rollout ended)"
        if seg.kind == "compaction":
            line += f"  <- summarises the context of {seg.origin_call or '-'} (S{seg.parent})"
            line += f"  -> resumed by {answer}"
        elif seg.kind == "subagent":
            tool = f"{seg.origin_call or '-'} tool call {seg.tool_call or '-'}"
            line += f"  <- started by {tool} (S{seg.parent})"
            line += f"  -> answer in {answer}"
        elif seg.parent >= 0:
            line += f"  <- runs on S{seg.parent}"
        out.append(line)
    return ["segments:", *out]


def render_text(
    tree: TraceTree, decode: Decode | None = None, width: int = 100, extra: Sequence[str] = ()
) -> str:
    """The tree as indented lines (after the summary and `extra` header lines), then one line per call."""
    lines = [*summary_lines(tree), *extra]
    kinds = _kinds(tree)
    for level, event, node in _walk(tree):
        if event != "node":
            continue
        pad = "  " * level
        ends = f"  ends {','.join(node.call_ids)}" if node.call_ids else ""
        parent = f" under #{node.parent}" if node.parent >= 0 else " root"
        kind = kinds.get(node.creator, "?")
        lines.append(f"{pad}#{node.node_id}{parent}  {kind}  {_counts(node)}  {_status(node)}{ends}")
        for is_model, ids in segments(node):
            lines.append(f"{pad}    {'model' if is_model else 'env  '} {_preview(ids, decode, width)}")
    lines.append("calls:")
    for c in tree.calls:
        fate = "kept" if c.kept else f"dropped {c.reason}"
        merged = f"  = {c.merged_with}" if c.merged_with else ""
        lines.append(
            f"  {c.call_id}  #{c.index}  {c.kind}  {c.render}  prompt {c.prompt_len} output {c.output_len}"
            f"  shared {c.matched}  -> node #{c.end_node}  {fate}{merged}"
        )
    lines.extend(segment_lines(tree))
    return "\n".join(lines) + "\n"


_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
.branch{margin-left:1.2em;border-left:2px dotted #bbb;padding-left:.6em}
details.node{margin:.25em 0;border-left:5px solid #888;padding:.1em .5em;background:#fafafa}
details.node>summary{cursor:pointer;font-family:monospace}
.k-main{border-color:#2b6cb0!important}.k-subagent{border-color:#805ad5!important}
.k-compaction_request,.k-compacted{border-color:#dd6b20!important}.k-replay,.k-empty{border-color:#999!important}
.dropped{opacity:.6}.dropped>summary{text-decoration:line-through}
.reason{color:#c53030;font-weight:bold}
pre{white-space:pre-wrap;word-break:break-word;margin:.2em 0;padding:.3em;font-size:12px}
pre.env{background:#edf2f7}pre.model{background:#c6f6d5}
table{border-collapse:collapse;font-family:monospace;font-size:12px}
td,th{border:1px solid #ccc;padding:2px 6px}
.legend span{display:inline-block;padding:0 .5em;margin-right:.5em}
"""


def _segment_html(is_model: bool, ids: list[int], decode: Decode | None) -> str:
    cls = "model" if is_model else "env"
    body = decode(ids) if decode is not None else " ".join(map(str, ids))
    pre = f'<pre class="{cls}">{html.escape(body)}</pre>'
    if len(body) <= 2000:
        return pre
    head = html.escape(body[:80].replace("\n", " "))
    return f"<details><summary>{cls}: {len(ids)} tokens: {head}...</summary>{pre}</details>"


def _node_html(node: TraceNode, kind: str, decode: Decode | None) -> str:
    cls = f"node k-{kind}" + ("" if node.kept else " dropped")
    status = "kept" if node.kept else f'<span class="reason">dropped: {node.drop_reason}</span>'
    ends = f" · ends {html.escape(', '.join(node.call_ids))}" if node.call_ids else ""
    summary = f"#{node.node_id} {kind} · {_counts(node)} · {status}{ends}"
    body = "".join(_segment_html(m, ids, decode) for m, ids in segments(node))
    return f'<details class="{cls}" open><summary>{summary}</summary>{body}</details>'


def render_html(tree: TraceTree, decode: Decode | None = None, extra: Sequence[str] = ()) -> str:
    """A self-contained HTML page (inline CSS, no script) showing the whole tree and the calls;
    `extra` lines go under the summary."""
    title = html.escape(f"prefix tree of rollout {tree.rollout_id}")
    out = [f"<!doctype html><html><head><meta charset='utf-8'><title>{title}</title><style>{_CSS}</style>"]
    out.append(f"</head><body><h2>{title}</h2>")
    out.extend(f"<div>{html.escape(line)}</div>" for line in [*summary_lines(tree), *extra])
    out.append(
        '<p class="legend"><span style="background:#edf2f7">environment tokens</span>'
        '<span style="background:#c6f6d5">model tokens</span>border: <span style="color:#2b6cb0">main</span>'
        '<span style="color:#805ad5">sub-agent</span><span style="color:#dd6b20">compaction</span>'
        '<span style="color:#999">replay / empty</span></p>'
    )
    kinds = _kinds(tree)
    for _level, event, node in _walk(tree):
        if event == "open":
            out.append('<div class="branch">')
        elif event == "close":
            out.append("</div>")
        else:
            out.append(_node_html(node, kinds.get(node.creator, "?"), decode))
    out.append("<h3>calls</h3><table><tr>")
    heads = ["call", "index", "kind", "render", "prompt", "output", "shared", "node", "fate", "duplicate of"]
    out.append("".join(f"<th>{h}</th>" for h in heads) + "</tr>")
    for c in tree.calls:
        fate = "kept" if c.kept else f"dropped: {c.reason}"
        cells = [
            c.call_id,
            c.index,
            c.kind,
            c.render,
            c.prompt_len,
            c.output_len,
            c.matched,
            c.end_node,
            fate,
        ]
        cells.append(c.merged_with or "")
        out.append("<tr>" + "".join(f"<td>{html.escape(str(x))}</td>" for x in cells) + "</tr>")
    out.append("</table>")
    if links := segment_lines(tree):
        out.append("<h3>segments</h3><pre>" + html.escape("\n".join(links[1:])) + "</pre>")
    out.append("</body></html>")
    return "\n".join(out)


def engine_line(calls: list[ModelCall]) -> str | None:
    """`engine: model M · tokenizer T · weights v0-2` from what the calls recorded (None: nothing)."""
    models = sorted({c.model_id for c in calls if c.model_id})
    toks = sorted({c.tokenizer for c in calls if c.tokenizer})
    versions = sorted({c.weights_version for c in calls if c.weights_version is not None})
    if not (models or toks or versions):
        return None
    span = "-" if not versions else f"v{versions[0]}" + (f"-{versions[-1]}" if len(versions) > 1 else "")
    return f"engine: model {', '.join(models) or '-'} · tokenizer {', '.join(toks) or '-'} · weights {span}"
