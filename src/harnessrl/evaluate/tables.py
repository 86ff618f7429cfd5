"""An evaluation report as files and tables: `eval.json` (machine), `eval.md` (human), rich tables.

    paths = write_report(report, out_dir)     # {"json": .../eval.json, "markdown": .../eval.md}
    for table in rich_tables(report): console.print(table)

`markdown(report)` is self-contained (a heading, then one pipe table per view) so a report page can
include it as is: the policies side by side, then per harness, per category, per task, the
harness-scaling groups (in-space train / in-space held-out / out-of-space) when white-box
configurations were evaluated, and when several policies were: the train x eval transfer table and
the paired differences (every later policy minus every earlier one, overall and per harness, with
a bootstrap interval over tasks and whether it excludes 0: `evaluate.paired`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.table import Table

from harnessrl.evaluate.paired import PAIRED_COLUMNS, paired_row, sentence
from harnessrl.formats.eval_report import write_eval


def fmt(x: float | None, digits: int = 3) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def spread(s: dict[str, Any]) -> str:
    """`0.417 +- 0.083 (min 0.333, max 0.667)`: Pass@1, its standard error over runs, the range."""
    if s.get("pass1") is None:
        return "-"
    se = "" if s.get("se") is None else f" +- {s['se']:.3f}"
    return f"{s['pass1']:.3f}{se} ({s['min']:.3f}-{s['max']:.3f})"


def statuses(s: dict[str, Any]) -> str:
    return " ".join(f"{k} {v}" for k, v in s.get("statuses", {}).items()) or "-"


SUMMARY_COLUMNS = ("Pass@1 +- se (range)", "mean score", "pass@k", "pass^k", "n", "statuses")


def summary_row(s: dict[str, Any]) -> list[str]:
    """One row of SUMMARY_COLUMNS; pass@k / pass^k at the largest k."""
    at, hat = s.get("pass_at_k") or {}, s.get("pass_hat_k") or {}
    k = max(at, key=int, default=None)
    return [
        spread(s),
        fmt(s.get("mean_score")),
        "-" if k is None else f"{at[k]:.3f} (k={k})",
        "-" if k is None else f"{hat[k]:.3f} (k={k})",
        f"{s.get('pairs', 0)}x{len(s.get('per_run') or [])}",
        statuses(s),
    ]


def views(report: dict[str, Any]) -> list[tuple[str, list[str], list[list[str]]]]:
    """(title, header, rows) of every table of the report, in the order the markdown shows them."""
    pols = report["policies"]
    out = [
        ("Policies", ["policy", *SUMMARY_COLUMNS], [[p, *summary_row(e["summary"])] for p, e in pols.items()])
    ]
    for key, title in (
        ("by_harness", "Per harness"),
        ("space", "Harness scaling"),
        ("by_category", "Per category"),
        ("by_task", "Per task"),
    ):
        rows = [[p, name, *summary_row(s)] for p, e in pols.items() for name, s in e.get(key, {}).items()]
        if rows:
            out.append((title, ["policy", key.removeprefix("by_"), *SUMMARY_COLUMNS], rows))
    if "transfer" in report:
        harnesses = report["config"]["harnesses"]
        rows = [[p, *(fmt(cells.get(h)) for h in harnesses)] for p, cells in report["transfer"].items()]
        out.append(("Transfer (Pass@1, policy x eval harness)", ["policy", *harnesses], rows))
    if report.get("paired"):
        out.append(paired_view(report["paired"]))
    return out


def paired_view(comparisons: list[dict[str, Any]]) -> tuple[str, list[str], list[list[str]]]:
    """The paired differences as one table: each comparison overall (`all`), then per harness."""
    c0 = comparisons[0]["overall"]
    title = (
        f"Paired differences (Pass@1, policy - baseline, {c0['confidence']:.0%} bootstrap interval "
        "over tasks)"
    )
    rows = [
        [c["policy"], c["baseline"], name, *paired_row(s)]
        for c in comparisons
        for name, s in [("all", c["overall"]), *c["by_harness"].items()]
    ]
    return title, ["policy", "baseline", "harness", *PAIRED_COLUMNS], rows


def markdown(report: dict[str, Any]) -> str:
    c = report["config"]
    lines = [
        "# Evaluation",
        "",
        f"{c['num_tasks']} tasks ({c['tasks']}, split {c['split']}) x {len(c['harnesses'])} harness(es) "
        f"x {c['runs']} runs; passed = ok and score >= {c['pass_threshold']}; engine {c['engine']}, "
        f"temperature {c['sampling']['temperature']}, seed {c['seed']}. Pass@1 = mean of the per-run "
        "pass rates, +- its standard error over runs; every rollout that did not end ok scores 0.",
    ]
    subset = c.get("per_category") or {}
    if subset:
        lines[-1] += (
            " Through "
            + ", ".join(f"{h} only the first {n} tasks of each category" for h, n in subset.items())
            + "."
        )
    for title, header, rows in views(report):
        lines += ["", f"## {title}", ""]
        if title.startswith("Paired differences"):
            lines += [*(sentence(c) for c in report["paired"]), ""]
        lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def rich_tables(report: dict[str, Any], *, tasks: bool = False) -> list[Table]:
    """The report's views as rich tables (the per-task view only when `tasks`)."""
    out = []
    for title, header, rows in views(report):
        if title == "Per task" and not tasks:
            continue
        table = Table(*header, title=title)
        for row in rows:
            table.add_row(*row)
        out.append(table)
    return out


def write_report(
    report: dict[str, Any],
    out_dir: str | Path,
    tracking: Any = None,
    config: dict[str, Any] | None = None,
) -> dict[str, Path]:
    """`eval.json` and `eval.md` under `out_dir`, and the report's scalars and tables to its trackers
    (`report.trackers`: TensorBoard in `out_dir/tb`, plus `tracking.report_to`); returns the paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"json": write_eval(out, report), "markdown": out / "eval.md"}
    paths["markdown"].write_text(markdown(report), encoding="utf-8")
    from harnessrl.report.trackers import open_trackers

    with open_trackers(out, tracking, kind="eval", config=config or {"eval": report["config"]}) as t:
        t.scalars(0, report_scalars(report))
        for title, header, rows in views(report):
            t.table("eval/" + title.split(" (")[0].lower().replace(" ", "_"), header, rows)
    return paths


def json_summary(report: dict[str, Any], paths: dict[str, Path]) -> dict[str, Any]:
    """What `harnessrl eval --json` prints: where the report went, each policy's summary and per-harness
    summaries, and the paired differences (every field as in `eval.json`)."""
    return {
        "report": str(paths["json"]),
        "markdown": str(paths["markdown"]),
        "policies": {
            p: {"summary": e["summary"], "by_harness": e["by_harness"]} for p, e in report["policies"].items()
        },
        "paired": report.get("paired", []),
    }


def report_scalars(report: dict[str, Any]) -> dict[str, float]:
    """`pass1/<policy>`, `pass1/<policy>/<harness>`, `mean_score/..`, `se/..`, `se_pairs/..` and
    `paired/<policy>-<baseline>/{difference,lo,hi}` (also per harness) of a report."""
    out: dict[str, float] = {}
    for p, e in report["policies"].items():
        for name, s in [("", e["summary"]), *((f"/{h}", v) for h, v in e.get("by_harness", {}).items())]:
            for key in ("pass1", "mean_score", "se", "se_pairs"):
                if s.get(key) is not None:
                    out[f"{key}/{p}{name}"] = float(s[key])
    for c in report.get("paired", []):
        where = f"paired/{c['policy']}-{c['baseline']}"
        for name, s in [("", c["overall"]), *((f"/{h}", v) for h, v in c["by_harness"].items())]:
            for key in ("difference", "lo", "hi"):
                out[f"{where}{name}/{key}"] = float(s[key])
    return out
