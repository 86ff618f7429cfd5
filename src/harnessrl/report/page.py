"""`harnessrl report RUN_DIR`: one self-contained HTML page about a run.

    RUN_DIR/report.html     the page: run summary, the PNG curves inlined as base64, the eval tables,
                            the last step's numbers, the rollouts with links to their tree views
    RUN_DIR/trees/<id>.html the tree views linked from it (`harnessrl tree show --html`, decoded with
                            the tokenizer the calls recorded), for up to `max_trees` rollouts: per
                            training step its best and worst rollout, then the others in order

The page holds no script and loads nothing: images are `data:` URIs, links are relative, so the
folder can be copied anywhere. Every section tolerates absence (no metrics, no eval, no matplotlib):
it says what is missing instead.
"""

from __future__ import annotations

import base64
import html
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from harnessrl.report.runs import EVAL_GLOB, RolloutHead, RunData, load_run

_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:1.5em auto;max-width:1320px;color:#222;padding:0 1em}
h1{font-size:22px}h2{font-size:17px;border-bottom:1px solid #ddd;padding-bottom:.2em;margin-top:1.6em}
.plots{display:grid;grid-template-columns:repeat(auto-fill,minmax(420px,1fr));gap:12px}
.plots img{width:100%;border:1px solid #eee}
table{border-collapse:collapse;font-size:12.5px;margin:.4em 0}
td,th{border:1px solid #ccc;padding:2px 7px;text-align:left;vertical-align:top}
th{background:#f3f4f6}td.num{text-align:right;font-variant-numeric:tabular-nums}
.note{color:#8a5a00}.muted{color:#777}code{background:#f3f4f6;padding:0 .25em}
.s-ok{color:#276749}.s-bad{color:#c53030}
"""
MAX_ROWS = 500
"""Rows shown per table (the rest are counted)."""


def _e(x: Any) -> str:
    return html.escape(str(x))


def _cell(v: Any) -> str:
    if isinstance(v, float):
        return f'<td class="num">{v:.4g}</td>'
    if isinstance(v, int) and not isinstance(v, bool):
        return f'<td class="num">{v}</td>'
    if isinstance(v, dict | list):
        return f"<td><code>{_e(json.dumps(v, sort_keys=True)[:400])}</code></td>"
    return f"<td>{_e('' if v is None else v)}</td>"


def table(rows: Sequence[dict[str, Any]], columns: Sequence[str] | None = None) -> str:
    """An HTML table of flat dicts (columns: the union of keys in first-seen order)."""
    if not rows:
        return '<p class="muted">(empty)</p>'
    cols = list(columns) if columns is not None else list(dict.fromkeys(k for r in rows for k in r))
    head = "".join(f"<th>{_e(c)}</th>" for c in cols)
    body = "".join("<tr>" + "".join(_cell(r.get(c)) for c in cols) + "</tr>" for r in rows[:MAX_ROWS])
    more = f'<p class="muted">... {len(rows) - MAX_ROWS} more rows</p>' if len(rows) > MAX_ROWS else ""
    return f"<table><tr>{head}</tr>{body}</table>{more}"


def _flat(v: Any) -> bool:
    return isinstance(v, dict) and all(not isinstance(x, dict | list) or _short(x) for x in v.values())


def _short(v: Any) -> bool:
    return len(json.dumps(v)) <= 80


def eval_section(path: Path, data: dict[str, Any], root: Path) -> str:
    """One eval report (the shape `runs` documents): summary scalars, then one table per tabular field."""
    title = data.get("title") or path.stem
    out = [f"<h3>{_e(title)} <span class='muted'>({_e(path.relative_to(root))})</span></h3>"]
    summary = {k: v for k, v in data.items() if not isinstance(v, dict | list) and k != "title"}
    if summary:
        out.append(table([summary]))
    for key, value in data.items():
        if isinstance(value, list) and value and all(isinstance(r, dict) and _flat(r) for r in value):
            out.append(f"<h4>{_e(key)}</h4>" + table(value))
        elif isinstance(value, dict) and value and all(_flat(r) for r in value.values()):
            out.append(f"<h4>{_e(key)}</h4>" + table([{key: k, **r} for k, r in value.items()]))
        elif isinstance(value, dict | list):
            text = json.dumps(value, indent=1, sort_keys=True)
            out.append(f"<h4>{_e(key)}</h4><pre>{_e(text[:20000])}</pre>")
    return "\n".join(out)


def _img(path: Path) -> str:
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return f'<img alt="{_e(path.stem)}" src="data:image/png;base64,{data}">'


def choose_trees(heads: Sequence[RolloutHead], limit: int) -> list[RolloutHead]:
    """Per training step its best and worst rewarded rollout, then the rest in order, up to `limit`."""
    picked: dict[str, RolloutHead] = {}
    by_step: dict[int, list[RolloutHead]] = {}
    for h in heads:
        if h.step is not None and h.reward is not None:
            by_step.setdefault(h.step, []).append(h)
    for step in sorted(by_step):
        group = sorted(by_step[step], key=lambda h: (h.reward or 0.0, h.rollout_id))
        for h in (group[-1], group[0]):
            picked.setdefault(h.rollout_id, h)
    for h in heads:
        picked.setdefault(h.rollout_id, h)
    return list(picked.values())[:limit]


def write_trees(run: RunData, limit: int) -> dict[str, str]:
    """Tree views of the chosen rollouts under RUN_DIR/trees; rollout_id -> relative link."""
    from harnessrl.trace.build import trace_rollout
    from harnessrl.trace.config import TraceConfig
    from harnessrl.trace.decode import choose_decoder
    from harnessrl.trace.load import TraceInputError, load_rollout
    from harnessrl.trace.views import engine_line, render_html

    links: dict[str, str] = {}
    out = run.root / "trees"
    for head in choose_trees(run.rollouts, limit):
        try:
            rollout = load_rollout(head.folder)
            choice = choose_decoder(rollout.calls, None)
        except TraceInputError as e:
            run.notes.append(f"tree of {head.rollout_id}: {e}")
            continue
        decode = choice.decoder.decode if choice.decoder is not None else None
        extra = [line] if (line := engine_line(rollout.calls)) else []
        page = render_html(trace_rollout(rollout, TraceConfig()), decode, extra=[*extra, *choice.notes])
        out.mkdir(parents=True, exist_ok=True)
        (out / f"{head.rollout_id}.html").write_text(page, encoding="utf-8")
        links[head.rollout_id] = f"trees/{head.rollout_id}.html"
    return links


def _rollout_rows(heads: Iterable[RolloutHead], links: dict[str, str]) -> str:
    rows = []
    for h in heads:
        link = links.get(h.rollout_id)
        tree = f'<a href="{_e(link)}">tree</a>' if link else '<span class="muted">-</span>'
        cls = "s-ok" if h.status == "ok" else "s-bad"
        reward = "" if h.reward is None else f"{h.reward:.3f}"
        rows.append(
            f"<tr><td>{_e(h.rollout_id)}</td><td class='num'>{'' if h.step is None else h.step}</td>"
            f"<td>{_e(h.task_id)}</td><td>{_e(h.harness)}</td><td class='{cls}'>{_e(h.status)}</td>"
            f"<td class='num'>{reward}</td><td>{tree}</td></tr>"
        )
    head = "".join(
        f"<th>{c}</th>" for c in ("rollout", "step", "task", "harness", "status", "reward", "view")
    )
    return f"<table><tr>{head}</tr>{''.join(rows[:MAX_ROWS])}</table>"


def _last_step(run: RunData) -> str:
    from harnessrl.formats.metrics import scalars

    if not run.metrics:
        return '<p class="muted">no metrics.jsonl (not a training run, or no step finished yet)</p>'
    last = run.metrics[-1]
    rows = [{"metric": k, "value": v} for k, v in sorted(scalars(last).items())]
    return f"<p>step {last['step']} (of {len(run.metrics)} logged)</p>" + table(rows)


def transfer_section(run: RunData, maps: Sequence[Path], plot_error: str | None) -> str:
    """The heat maps of a harness-transfer run and its diagonal comparisons (`transfer.json`)."""
    out = ["<h2>Harness transfer</h2>"]
    if run.transfer is None:
        return "\n".join(out + [f"<p class='note'>{_e(n)}</p>" for n in run.notes if "transfer" in n])
    if plot_error:
        out.append(f"<p class='note'>{_e(plot_error)}</p>")
    out.append("<div class='plots'>" + "".join(_img(p) for p in maps) + "</div>")
    for group, rows in run.transfer.get("diagonal", {}).items():
        if isinstance(rows, list) and rows and all(isinstance(r, dict) for r in rows):
            shown = [
                {
                    "evaluated in": r.get("harness"),
                    "arm": r.get("arm"),
                    "over": r.get("other"),
                    "difference [95% interval]": f"{r['difference']:+.3f} [{r['lo']:+.3f}, {r['hi']:+.3f}]"
                    if all(isinstance(r.get(k), int | float) for k in ("difference", "lo", "hi"))
                    else "-",
                    "tasks": r.get("tasks"),
                }
                for r in rows
            ]
            out.append(f"<h4>diagonal, {_e(group)}</h4>" + table(shown))
    if (run.root / "transfer.md").is_file():
        out.append("<p><a href='transfer.md'>transfer.md</a></p>")
    return "\n".join(out)


def build_page(
    run: RunData,
    plots: Sequence[Path],
    links: dict[str, str],
    plot_error: str | None,
    transfer: str = "",
) -> str:
    title = f"harnessrl run {run.root.name}"
    out = [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'><link rel='icon' href='data:,'>",
        f"<title>{_e(title)}</title><style>{_CSS}</style></head><body><h1>{_e(title)}</h1>",
        f"<p class='muted'>{_e(run.root.resolve())} · {len(run.metrics)} steps · {len(run.rollouts)} "
        f"rollouts · {len(run.evals)} eval reports · TensorBoard: <code>tensorboard --logdir "
        f"{_e(run.root / 'tb')}</code></p>",
        "<h2>Curves</h2>",
    ]
    if plot_error:
        out.append(f"<p class='note'>{_e(plot_error)}</p>")
    elif plots:
        out.append("<div class='plots'>" + "".join(_img(p) for p in plots) + "</div>")
    else:
        out.append("<p class='muted'>no metrics to plot</p>")
    if transfer:
        out.append(transfer)
    out.append("<h2>Evaluation</h2>")
    if run.evals:
        out.extend(eval_section(p, d, run.root) for p, d in run.evals)
    else:
        out.append(f"<p class='muted'>no eval reports ({_e(EVAL_GLOB)})</p>")
    for md in run.eval_markdown:
        out.append(f"<p><a href='{_e(md.relative_to(run.root))}'>{_e(md.name)}</a></p>")
    out.append("<h2>Last step</h2>" + _last_step(run))
    out.append(f"<h2>Rollouts ({len(run.rollouts)}; {len(links)} tree views)</h2>")
    out.append(_rollout_rows(run.rollouts, links) if run.rollouts else "<p class='muted'>none</p>")
    if run.notes:
        out.append(
            "<h2>Notes</h2><ul>" + "".join(f"<li class='note'>{_e(n)}</li>" for n in run.notes) + "</ul>"
        )
    out.append("</body></html>")
    return "\n".join(out)


def write_report(root: str | Path, out: str | Path | None = None, max_trees: int = 40) -> Path:
    """Plots into RUN_DIR/plots, tree views into RUN_DIR/trees, the page to `out` (RUN_DIR/report.html)."""
    from harnessrl.report.plot import PlotError, plot_run, plot_transfer

    run = load_run(root)
    plots: list[Path] = []
    error = None
    if run.metrics:
        try:
            plots = plot_run(run.metrics, run.root / "plots")
        except PlotError as e:
            error = str(e)
    transfer = ""
    if run.transfer is not None or any("transfer" in n for n in run.notes):
        maps: list[Path] = []
        transfer_error = None
        if run.transfer is not None:
            try:
                maps = plot_transfer(run.transfer, run.root / "plots")
            except PlotError as e:
                transfer_error = str(e)
        transfer = transfer_section(run, maps, transfer_error)
    links = write_trees(run, max_trees)
    path = Path(out) if out is not None else run.root / "report.html"
    path.write_text(build_page(run, plots, links, error, transfer), encoding="utf-8")
    return path
