"""PNG curves of a training run (`harnessrl plot RUN_DIR`), from the scalars of its metrics.jsonl.

    reward.png      reward mean (band: +- std) overall and per harness kind, pass rate on a twin axis
    pass_rate.png   pass rate (passed / scheduled rollouts)
    entropy.png     policy entropy on the trained tokens
    mismatch.png    |trainer - sampler| log-prob mean and max (log scale), TIS truncation fraction
    filters.png     rollouts per non-ok status label, stacked per step (timeouts, errors, filtered:*)
    step_time.png   seconds per stage, stacked per step; the rollouts stage split into agent and verify

A chart whose metric never appears (no trained step, a run without failures) is still drawn, saying
"no data", so the set of files is the same for every run. matplotlib (`harnessrl[viz]`) is imported
only here, with the Agg backend (no display).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from harnessrl.formats.metrics import scalars

PLOTS = ("reward", "pass_rate", "entropy", "mismatch", "filters", "step_time")
STAGES = ("rollouts", "trees", "advantages", "train", "weights", "checkpoint")


class PlotError(RuntimeError):
    """Plots cannot be drawn here (matplotlib missing)."""


def _pyplot() -> Any:
    try:
        import matplotlib
    except ModuleNotFoundError:
        raise PlotError("matplotlib is not installed: pip install 'harnessrl[viz]'") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def series(rows: Sequence[dict[str, float]], steps: Sequence[int], tag: str) -> tuple[list[int], list[float]]:
    """(steps, values) of the steps where `tag` was measured."""
    pts = [(s, r[tag]) for s, r in zip(steps, rows, strict=True) if tag in r]
    return [p[0] for p in pts], [p[1] for p in pts]


def _no_data(ax: Any) -> None:
    ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes, color="#888")


def _reward(ax: Any, rows: list[dict[str, float]], steps: list[int]) -> None:
    kinds = sorted(
        {k.split("/")[1] for r in rows for k in r if k.startswith("reward/") and k.endswith("/mean")}
    )
    drawn = False
    for label, tag in [("all", "reward"), *((k, f"reward/{k}") for k in kinds)]:
        xs, ys = series(rows, steps, f"{tag}/mean")
        if not xs:
            continue
        drawn = True
        (line,) = ax.plot(xs, ys, marker="o", label=label)
        _, sd = series(rows, steps, f"{tag}/std")
        if len(sd) == len(ys):
            low = [y - s for y, s in zip(ys, sd, strict=True)]
            high = [y + s for y, s in zip(ys, sd, strict=True)]
            ax.fill_between(xs, low, high, color=line.get_color(), alpha=0.15)
    if drawn:
        ax.legend(loc="best", fontsize=8)
    else:
        _no_data(ax)
    ax.set_ylabel("reward")


def _lines(
    tags: Sequence[str], ylabel: str, log: bool = False
) -> Callable[[Any, list[dict[str, float]], list[int]], None]:
    def draw(ax: Any, rows: list[dict[str, float]], steps: list[int]) -> None:
        drawn = False
        for tag in tags:
            xs, ys = series(rows, steps, tag)
            if xs:
                drawn = True
                ax.plot(xs, ys, marker="o", label=tag)
        if not drawn:
            _no_data(ax)
        elif len(tags) > 1:
            ax.legend(loc="best", fontsize=8)
        if log and drawn:
            ax.set_yscale("symlog", linthresh=1e-6)
        ax.set_ylabel(ylabel)

    return draw


def _stacked(
    prefix: str, keys: Callable[[list[dict[str, float]]], list[str]], ylabel: str
) -> Callable[..., None]:
    def draw(ax: Any, rows: list[dict[str, float]], steps: list[int]) -> None:
        names = keys(rows)
        bottom = [0.0] * len(rows)
        for name in names:
            vals = [r.get(f"{prefix}{name}", 0.0) for r in rows]
            ax.bar(steps, vals, bottom=bottom, label=name)
            bottom = [b + v for b, v in zip(bottom, vals, strict=True)]
        if names:
            ax.legend(loc="best", fontsize=8)
        else:
            _no_data(ax)
        ax.set_ylabel(ylabel)

    return draw


def _failure_labels(rows: list[dict[str, float]]) -> list[str]:
    return sorted(
        {k[len("status/") :] for r in rows for k in r if k.startswith("status/") and k != "status/ok"}
    )


def _time_rows(rows: list[dict[str, float]]) -> list[dict[str, float]]:
    """The rollouts stage split into `agent` and `verify` (its verify share)."""
    out = []
    for r in rows:
        t = dict(r)
        if "time/rollouts" in t:
            verify = t.get("time/verify", 0.0)
            t["time/verify"], t["time/agent"] = verify, t["time/rollouts"] - verify
        out.append(t)
    return out


def _time_stages(rows: list[dict[str, float]]) -> list[str]:
    order = ["agent", "verify", *STAGES[1:]]
    return [s for s in order if any(f"time/{s}" in r for r in rows)]


def _step_time(ax: Any, rows: list[dict[str, float]], steps: list[int]) -> None:
    _stacked("time/", _time_stages, "seconds")(ax, _time_rows(rows), steps)


CHARTS: dict[str, tuple[str, Callable[[Any, list[dict[str, float]], list[int]], None]]] = {
    "reward": ("reward (ok rollouts; band: +- std)", _reward),
    "pass_rate": ("pass rate (passed / scheduled rollouts)", _lines(["pass_rate"], "pass rate")),
    "entropy": ("policy entropy (trained tokens)", _lines(["entropy"], "nats / token")),
    "mismatch": (
        "sampler vs trainer log-prob mismatch; TIS truncation",
        _lines(["mismatch/abs_mean", "mismatch/abs_max", "mismatch/frac_truncated"], "value", log=True),
    ),
    "filters": ("rollouts not trained, by status", _stacked("status/", _failure_labels, "rollouts")),
    "step_time": ("step time by stage", _step_time),
}


def _save(fig: Any, path: Path) -> Path:
    """Lay `fig` out tightly and write it to `path`."""
    fig.tight_layout()
    fig.savefig(path)
    return path


def plot_run(records: Sequence[dict[str, Any]], out_dir: str | Path) -> list[Path]:
    """Write the PNGs of `PLOTS` for these metrics records into `out_dir`; returns their paths."""
    plt = _pyplot()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rows = [scalars(r) for r in records]
    steps = [int(r["step"]) for r in records]
    paths = []
    for name in PLOTS:
        title, draw = CHARTS[name]
        fig, ax = plt.subplots(figsize=(6.4, 3.6), dpi=100)
        try:
            draw(ax, rows, steps)
            ax.set_title(title, fontsize=10)
            ax.set_xlabel("step")
            ax.grid(alpha=0.3)
            if steps:
                ax.set_xticks(sorted(set(steps))[:: max(1, len(set(steps)) // 10)])
            paths.append(_save(fig, out / f"{name}.png"))
        finally:
            plt.close(fig)
    return paths


def plot_transfer(summary: dict[str, Any], out_dir: str | Path) -> list[Path]:
    """One heat map per task group of a harness-transfer run (`transfer.json`): policies x evaluation
    harnesses, coloured by Pass@1, each cell annotated with Pass@1 and, below it, the paired difference
    against the cold start (`transfer-<group>.png`; harnesses no arm trained in are marked *)."""
    plt = _pyplot()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    harnesses = list(summary["eval_harnesses"])
    trained = {h for hs in summary.get("arms", {}).values() if isinstance(hs, list) for h in hs}
    paths = []
    for group, rows in summary["matrix"].items():
        policies = list(rows)
        values = [[rows[p][h].get("pass1") for h in harnesses] for p in policies]
        grid = [[float("nan") if v is None else v for v in row] for row in values]
        fig, ax = plt.subplots(figsize=(1.9 * len(harnesses) + 2.2, 0.55 * len(policies) + 1.6), dpi=100)
        try:
            im = ax.imshow(grid, cmap="viridis", vmin=0.0, vmax=1.0, aspect="auto")
            for i, p in enumerate(policies):
                for j, h in enumerate(harnesses):
                    cell = rows[p][h]
                    text = "-" if cell.get("pass1") is None else f"{cell['pass1']:.2f}"
                    c = cell.get("vs_cold")
                    if isinstance(c, dict) and isinstance(c.get("difference"), int | float):
                        text += f"\n{c['difference']:+.2f} [{c['lo']:+.2f}, {c['hi']:+.2f}]"
                    light = cell.get("pass1") is not None and cell["pass1"] > 0.6
                    ax.text(
                        j,
                        i,
                        text,
                        ha="center",
                        va="center",
                        fontsize=7.5,
                        color="black" if light else "white",
                    )
            ax.set_xticks(
                range(len(harnesses)), [h + ("" if h in trained else " *") for h in harnesses], fontsize=8
            )
            ax.set_yticks(range(len(policies)), policies, fontsize=8)
            ax.set_xlabel("evaluated in (* = no arm trained in it)", fontsize=8)
            ax.set_title(f"Pass@1, {group} (below: vs cold start, 95% interval)", fontsize=9)
            fig.colorbar(im, ax=ax, fraction=0.04)
            paths.append(_save(fig, out / f"transfer-{group}.png"))
        finally:
            plt.close(fig)
    return paths
