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
            fig.tight_layout()
            path = out / f"{name}.png"
            fig.savefig(path)
            paths.append(path)
        finally:
            plt.close(fig)
    return paths
