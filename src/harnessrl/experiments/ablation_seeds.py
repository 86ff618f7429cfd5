"""Several runs of the harness-scaling ablation side by side (one per seed):

    scripts/scaling_ablation -o train.seed=1 -o ablation.out_dir=runs/scaling-ablation-s1   # a replicate
    scripts/scaling_ablation --combine runs/scaling-ablation --combine runs/scaling-ablation-s1
    scripts/scaling_ablation --combine ... --reference oa-18           # every arm against oa-18

Each run is a replicate of the whole experiment: its own draws of the random designs, its own RL
seed, and its own in-space evaluation configurations (drawn outside that run's arms, so they differ
between runs). Policies are therefore compared within a run, paired over the run's (task,
configuration, eval run) outcomes, and only then put together:

- per run: Pass@1 and the paired difference against `reference` (+- its standard error over pairs);
- over runs: the mean of each and its standard error over runs (the spread that a new seed would
  show; with two or three runs a rough one), and the difference pooled over every pair of every run
  (+- the standard error over pairs: the task-and-configuration sampling noise alone).

Reads only the runs' `ablation.json` and `eval/<policy>/eval.json`; runs nothing.
"""

from __future__ import annotations

import math
import statistics
from pathlib import Path
from typing import Any

from harnessrl.formats import FormatError
from harnessrl.formats.eval_report import EVAL_FILE, read_eval
from harnessrl.formats.summaries import ABLATION_FILE, read_ablation
from harnessrl.scaling import harness_name

GROUP_NAMES = {"in_space_heldout": "in-space held-out", "out_of_space": "out of the space"}


def mean_se(xs: list[float]) -> tuple[float, float | None]:
    """The mean and its standard error (None for fewer than two values)."""
    if not xs:
        return math.nan, None
    se = statistics.stdev(xs) / math.sqrt(len(xs)) if len(xs) > 1 else None
    return statistics.fmean(xs), se


def load_run(out: Path) -> dict[str, dict[str, dict[tuple[str, str, int], float]]]:
    """{group: {policy: {(task, harness, eval run): passed (0/1)}}} of one ablation run. A rollout
    that did not end `ok` is in its report as failed, so it is here too."""
    try:
        summary = read_ablation(out / ABLATION_FILE)
    except FormatError as e:
        raise ValueError(f"{out}: no readable ablation.json (run scripts/scaling_ablation first): {e}") from e
    groups: dict[str, set[str]] = {
        "in_space_heldout": {harness_name(c) for c in summary["eval_configs"]},
        "out_of_space": set(summary["out_of_space"]),
    }
    result: dict[str, dict[str, dict[tuple[str, str, int], float]]] = {g: {} for g in groups}
    for policy in summary["policies"]:
        report = out / "eval" / policy / EVAL_FILE
        try:
            outcomes = read_eval(report)["outcomes"]
        except (ValueError, KeyError) as e:
            raise ValueError(f"{report}: not an eval report: {e}") from e
        for group, harnesses in groups.items():
            result[group][policy] = {
                (o["task_id"], o["harness"], int(o["run"])): float(bool(o["passed"]))
                for o in outcomes
                if o["harness"] in harnesses
            }
    return result


def combine(dirs: list[Path], reference: str = "cold-start") -> dict[str, Any]:
    """{group: {policy: {"runs": [{pass1, diff, diff_se, pairs}], "pass1", "pass1_se", "diff",
    "diff_se", "pooled_diff", "pooled_diff_se", "pairs"}}} over the runs in `dirs` (module docstring)."""
    runs = [load_run(d) for d in dirs]
    out: dict[str, Any] = {}
    for group in GROUP_NAMES:
        policies = [p for p in runs[0][group] if all(p in r[group] for r in runs)]
        if reference not in policies:
            raise ValueError(f"reference policy {reference!r} is not in every run (have {policies})")
        table: dict[str, Any] = {}
        for policy in policies:
            per_run: list[dict[str, Any]] = []
            pooled: list[float] = []
            for r in runs:
                mine, ref = r[group][policy], r[group][reference]
                keys = sorted(set(mine) & set(ref))
                diffs = [mine[k] - ref[k] for k in keys]
                pooled += diffs
                diff, diff_se = mean_se(diffs)
                per_run.append(
                    {
                        "pass1": mean_se(list(mine.values()))[0],
                        "diff": diff,
                        "diff_se": diff_se,
                        "pairs": len(keys),
                    }
                )
            pass1, pass1_se = mean_se([x["pass1"] for x in per_run])
            diff, diff_se = mean_se([x["diff"] for x in per_run])
            pooled_diff, pooled_se = mean_se(pooled)
            table[policy] = {
                "runs": per_run,
                "pass1": pass1,
                "pass1_se": pass1_se,
                "diff": diff,
                "diff_se": diff_se,
                "pooled_diff": pooled_diff,
                "pooled_diff_se": pooled_se,
                "pairs": len(pooled),
            }
        out[group] = table
    return out


def _pm(x: float, se: float | None, sign: bool = False) -> str:
    text = f"{x:+.3f}" if sign else f"{x:.3f}"
    return text if se is None else f"{text} +- {se:.3f}"


def combined_markdown(dirs: list[Path], combined: dict[str, Any], reference: str) -> str:
    lines = [f"{len(dirs)} ablation runs: " + ", ".join(str(d) for d in dirs), ""]
    for group, table in combined.items():
        head = ["policy", *(f"run {i + 1}: Pass@1 (vs {reference})" for i in range(len(dirs)))]
        head += ["Pass@1 over runs", f"vs {reference} over runs", f"vs {reference} pooled pairs"]
        lines += [f"**{GROUP_NAMES[group]}**", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for policy, s in table.items():
            cells = [f"{r['pass1']:.3f} ({_pm(r['diff'], r['diff_se'], True)})" for r in s["runs"]]
            cells += [_pm(s["pass1"], s["pass1_se"]), _pm(s["diff"], s["diff_se"], True)]
            cells.append(f"{_pm(s['pooled_diff'], s['pooled_diff_se'], True)} (n={s['pairs']})")
            lines.append("| " + " | ".join([policy, *cells]) + " |")
        lines.append("")
    return "\n".join(lines)
