"""The tables of a finished harness-transfer run (`experiments.transfer`): read back from its stage
folders, so a rerun that reuses every stage still reports them.

    summary |= matrices(out, summary, cfg)        # per task group: policy x harness matrix, diagonal
    summary["time_split"] = time_split(out, summary)
    write_tables(out, summary)                    # transfer.json (`formats.transfer`) + transfer.md

`transfer_tables` is the pure part ({policy: outcomes} in, matrices and diagonal comparisons out);
`table_markdown` draws them, the diagonal comparisons and the time split as markdown.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from harnessrl.evaluate.stats import Outcome
from harnessrl.experiments.config import TransferSections

TABLE_FILE = "transfer.md"
GROUPS = {"heldout": "held-out instances of the train families", "heldout_family": "held-out family"}
COLD = "cold-start"


def policy_name(arm: str, seed: int) -> str:
    return f"{arm}-s{seed}"


def time_split(out: Path, summary: Mapping[str, Any], base_row: bool = False) -> dict[str, Any]:
    """Where the time went, read back from the stage folders (so a rerun that reuses every stage
    still reports it): per arm and seed the mean seconds of each training-step phase
    (`metrics.jsonl` `time`), and per stage the rollout split per harness (`evaluate.timing`)."""
    from harnessrl.evaluate.timing import folder_times
    from harnessrl.formats.metrics import METRICS_FILE, read_metrics

    steps: dict[str, dict[str, float]] = {}
    groups: dict[str, dict[str, float]] = {}
    rollouts: dict[str, Any] = {"sft demonstrations": folder_times(out / "sft" / "demos")}
    for name in summary["training"]:
        records, _ = read_metrics(out / f"arm-{name}" / METRICS_FILE)
        laps = [r["time"] for r in records if isinstance(r.get("time"), dict)]
        keys = sorted({k for lap in laps for k, v in lap.items() if isinstance(v, int | float)})
        steps[name] = {k: round(sum(float(lap.get(k, 0.0)) for lap in laps) / len(laps), 1) for k in keys}
        groups[name] = step_groups(records)
        rollouts[f"train {name}"] = folder_times(out / f"arm-{name}" / "rollouts")
    for policy in [*(["base"] if base_row else []), COLD, *summary["training"]]:
        rollouts[f"eval {policy}"] = folder_times(out / "eval" / policy)
    return {"train_steps": steps, "train_groups": groups, "rollouts": rollouts}


GROUP_KEYS = ("scheduled", "informative", "resampled", "trained", "zero_variance")
"""`metrics.jsonl` `groups` counts averaged per step by `step_groups` (`scheduled`: every group run,
the resampled ones included)."""


def step_groups(records: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """Mean per step of a training run's rollouts and GRPO group counts (`GROUP_KEYS`), so runs with
    and without dynamic sampling compare what a step cost and what it trained."""
    if not records:
        return {}

    def mean(values: Sequence[float]) -> float:
        return round(sum(values) / len(records), 2)

    counts = {"rollouts": mean([float(r.get("rollouts", 0)) for r in records])}
    for k in GROUP_KEYS:
        counts[k] = mean([float((r.get("groups") or {}).get(k, 0)) for r in records])
    return counts


def read_outcomes(out: Path, policy: str) -> list[Outcome]:
    from harnessrl.evaluate.paired import outcomes_of
    from harnessrl.formats.eval_report import EVAL_FILE, read_eval

    return outcomes_of(read_eval(out / "eval" / policy / EVAL_FILE), policy)


def matrices(out: Path, summary: Mapping[str, Any], cfg: TransferSections) -> dict[str, Any]:
    """The matrices and diagonal comparisons of a finished run, from its `eval/<policy>/eval.json`."""
    policies = (["base"] if cfg.transfer.base_model_row else []) + [COLD]
    outcomes = {p: read_outcomes(out, p) for p in policies}
    for arm in summary["arms"]:
        for seed in summary["seeds"]:
            outcomes[policy_name(arm, seed)] = read_outcomes(out, policy_name(arm, seed))
    e = cfg.eval
    kw = {"resamples": e.bootstrap_resamples, "seed": e.seed, "confidence": e.confidence}
    return transfer_tables(outcomes, summary["arms"], summary["seeds"], summary["eval_harnesses"],
                           summary["groups"], **kw)  # fmt: skip


def _pass1(outs: Sequence[Outcome]) -> float | None:
    return sum(o.passed for o in outs) / len(outs) if outs else None


def transfer_tables(
    outcomes: Mapping[str, Sequence[Outcome]],
    arms: Mapping[str, Sequence[str]],
    seeds: Sequence[int],
    harnesses: Sequence[str],
    groups: Mapping[str, Sequence[str]],
    **kw: Any,
) -> dict[str, Any]:
    """Pure: {policy: outcomes} (policies `base`?, `cold-start`, `<arm>-s<seed>`) -> per group the
    matrix {row: {harness: cell}} and the diagonal comparisons (module docstring).

    A cell: `pass1` (an arm's: the mean over seeds of its per-seed Pass@1), `per_seed`, `n` (outcomes
    per seed), and for every row but the cold start `vs_cold` = `evaluate.paired.pooled` over the seeds
    (d_t averaged over seeds, bootstrap over tasks)."""
    from harnessrl.evaluate.paired import pooled

    def select(policy: str, group: Sequence[str], harness: str) -> list[Outcome]:
        ids = set(group)
        return [o for o in outcomes[policy] if o.harness == harness and o.task_id in ids]

    rows: dict[str, list[str]] = {p: [p] for p in ("base", COLD) if p in outcomes}
    rows |= {arm: [policy_name(arm, s) for s in seeds] for arm in arms}
    result: dict[str, Any] = {"matrix": {}, "diagonal": {}}
    for group, ids in groups.items():
        matrix: dict[str, dict[str, Any]] = {}
        for row, policies in rows.items():
            matrix[row] = {}
            for h in harnesses:
                per = [_pass1(select(p, ids, h)) for p in policies]
                vals = [x for x in per if x is not None]
                cell: dict[str, Any] = {
                    "pass1": sum(vals) / len(vals) if vals else None,
                    "per_seed": per,
                    "n": len(select(policies[0], ids, h)),
                }
                if row != COLD and vals:
                    cold = select(COLD, ids, h)
                    cell["vs_cold"] = pooled([(cold, select(p, ids, h)) for p in policies], **kw)
                matrix[row][h] = cell
        result["matrix"][group] = matrix
        diagonal = []
        for h in harnesses:
            home = [a for a, hs in arms.items() if list(hs) == [h]]
            for a in home:
                for other in arms:
                    if other == a:
                        continue
                    pairs = [(select(policy_name(other, s), ids, h), select(policy_name(a, s), ids, h))
                             for s in seeds]  # fmt: skip
                    if not pairs[0][0]:
                        continue
                    diagonal.append({"harness": h, "arm": a, "other": other} | pooled(pairs, **kw))
        result["diagonal"][group] = diagonal
    return result


def _cell_text(cell: Mapping[str, Any]) -> str:
    from harnessrl.evaluate.paired import signed

    if cell.get("pass1") is None:
        return "-"
    text = f"{cell['pass1']:.3f}"
    c = cell.get("vs_cold")
    if c is not None:
        text += f" ({signed(c['difference'])} [{signed(c['lo'])}, {signed(c['hi'])}])"
    return text


def _arm_train_text(summary: Mapping[str, Any], arm: str) -> str:
    fields = (summary.get("arm_train") or {}).get(arm)
    return " (" + ", ".join(f"train.{k} = {v}" for k, v in fields.items()) + ")" if fields else ""


def _header_line(summary: Mapping[str, Any]) -> str:
    b = summary["budget"]
    arms = "; ".join(
        f"`{a}` = {', '.join(h)}" + _arm_train_text(summary, a) for a, h in summary["arms"].items()
    )
    return (
        f"Harness transfer, {summary['date']}: arms {arms}; seeds {summary['seeds']}; budget per arm "
        f"{b['steps']} steps x {b['tasks_per_step']} tasks x {b['group_size']} rollouts; "
        f"{summary['eval_runs']} eval run(s) per (task, harness). Cells: Pass@1 (arms: mean over seeds) "
        "and, in brackets, the paired difference against the cold start with its 95% bootstrap "
        "interval over tasks. Harnesses no arm trained in are marked *."
    )


def _matrix_lines(summary: Mapping[str, Any], group: str, matrix: Mapping[str, Any]) -> list[str]:
    """One task group's policy x harness matrix."""
    hs = summary["eval_harnesses"]
    trained = {h for arm in summary["arms"].values() for h in arm}
    n = len(summary["groups"][group])
    lines = ["", f"### {GROUPS.get(group, group)} ({n} tasks)", ""]
    lines += ["| policy | " + " | ".join(h + ("" if h in trained else " *") for h in hs) + " |"]
    lines += ["|---|" + "---|" * len(hs)]
    lines += [
        f"| {row} | " + " | ".join(_cell_text(cells[h]) for h in hs) + " |" for row, cells in matrix.items()
    ]
    return lines


def _diagonal_lines(diag: Sequence[Mapping[str, Any]]) -> list[str]:
    """The diagonal comparisons of one task group (none: no lines)."""
    from harnessrl.evaluate.paired import signed

    if not diag:
        return []
    head = "Diagonal: on each training harness, the arm that trained only there against each other"
    lines = ["", head + " arm (paired seed by seed):", ""]
    lines += [
        "| evaluated in | arm | over | difference [95% interval] | tasks up / down |",
        "|---|---|---|---|---|",
    ]
    for d in diag:
        verdict = "excludes 0" if d["excludes_zero"] else "includes 0"
        lines.append(
            f"| {d['harness']} | {d['arm']} | {d['other']} | {signed(d['difference'])} "
            f"[{signed(d['lo'])}, {signed(d['hi'])}] ({verdict}) | {d['up']} / {d['down']} |"
        )
    return lines


def _time_lines(split: Mapping[str, Any]) -> list[str]:
    """Where the time went: training-step phases, GRPO groups per step, seconds per rollout."""
    from harnessrl.evaluate.timing import times_markdown

    lines = [
        "",
        "### Where the time went",
        "",
        "Mean seconds per training step (`metrics.jsonl` `time`):",
        "",
    ]
    keys = sorted({k for t in split["train_steps"].values() for k in t})
    lines += ["| run | " + " | ".join(keys) + " |", "|---|" + "---|" * len(keys)]
    lines += [f"| {n} | " + " | ".join(f"{t.get(k, 0.0):.1f}" for k in keys) + " |"
              for n, t in split["train_steps"].items()]  # fmt: skip
    per = split.get("train_groups") or {}
    if per:
        cols = ["rollouts", *GROUP_KEYS]
        lines += ["", "Mean rollouts and GRPO groups per training step (`metrics.jsonl` `groups`):", ""]
        lines += ["| run | " + " | ".join(cols) + " |", "|---|" + "---|" * len(cols)]
        lines += [f"| {n} | " + " | ".join(f"{g.get(k, 0.0):g}" for k in cols) + " |"
                  for n, g in per.items()]  # fmt: skip
    lines += ["", "Mean seconds per rollout (`evaluate.timing`):"]
    for stage, times in split["rollouts"].items():
        if times:
            lines += ["", f"{stage}:", "", times_markdown(times).rstrip("\n")]
    return lines


def table_markdown(summary: Mapping[str, Any]) -> str:
    """The matrices, the diagonal comparisons and the stage times as markdown."""
    lines = [_header_line(summary)]
    for group, matrix in summary["matrix"].items():
        lines += _matrix_lines(summary, group, matrix)
        lines += _diagonal_lines(summary["diagonal"].get(group, []))
    split = summary.get("time_split")
    if split:
        lines += _time_lines(split)
    secs = summary.get("seconds", {})
    if secs:
        total = (
            f"Wall time: {sum(secs.values()) / 60:.1f} min (each stage when it ran, reused ones included): "
        )
        lines += ["", total + ", ".join(f"{k} {v:.0f} s" for k, v in secs.items())]
    return "\n".join(lines) + "\n"


def write_tables(out: Path, summary: dict[str, Any]) -> None:
    from harnessrl.formats.transfer import write_transfer

    write_transfer(out, summary)
    (out / TABLE_FILE).write_text(table_markdown(summary), encoding="utf-8")
