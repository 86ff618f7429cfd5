"""The credit experiment's tables (docs/credit.md) from its run folder, finished or cut short.

    python -m harnessrl.experiments.credit_tables runs/credit [--resamples N] [--config configs/credit.toml]

Reads every `eval/<policy>/eval.json` present (`cold-start`, `<arm>-s<seed>`) and prints, per
evaluation harness: a row per policy (Pass@1, mean score, statuses) and the paired differences of
`COMPARISONS` whose two sides both ran, in mean score and in Pass@1. A difference between two arms
pairs seed s with seed s over the seeds both have; against the cold start every seed of the arm is
paired with it; the replicates are pooled (`evaluate.paired.pooled`: d_t averaged over the seeds,
percentile bootstrap over tasks). Then, from each `arm-<arm>-s<seed>/rollouts`, what the RL
rollouts held (`rl_rows`): how many compacted, how many GRPO groups mixed rollouts that compacted
and that did not (where `credited` gives a summary a baseline of its own), and the summaries and
helpers whose output was used; with `--config` (the run's), for the GRPO arms the config still
holds that train segments (`outcome`, `credited`), what `credited` does or would do to their own
batches: the share of the step's weight it moves and the mean advantage on summary tokens under
each rule (`credit_moved`).
"""

from __future__ import annotations

import argparse
import re
import tomllib
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from harnessrl.evaluate.paired import Metric, pooled, signed
from harnessrl.evaluate.stats import Outcome
from harnessrl.experiments.config import TransferSections
from harnessrl.experiments.transfer_report import COLD, read_outcomes
from harnessrl.formats.rollout_dir import rollout_folders, rollout_step
from harnessrl.types import Rollout

COMPARISONS = (
    ("cold-start", "exclude"),
    ("cold-start", "outcome"),
    ("cold-start", "credited"),
    ("cold-start", "credited-tree"),
    ("exclude", "outcome"),
    ("exclude", "credited"),
    ("outcome", "credited"),
    ("exclude", "credited-tree"),
    ("credited", "credited-tree"),
    ("cold-start", "outcome-600"),
    ("cold-start", "credited-600"),
    ("outcome", "outcome-600"),
    ("outcome", "credited-600"),
    ("outcome-600", "credited-600"),
    ("cold-start", "outcome-300"),
    ("cold-start", "credited-300"),
    ("outcome", "outcome-300"),
    ("outcome-300", "credited-300"),
)
"""(base, other) pairs: what each arm's training did; does training the segments help (outcome,
credited vs exclude: under exclude the main steps after a compaction are dropped too); does credit
of their own beat the rollout's advantage (credited vs outcome); does the tree advantage add to the
credited segments (credited-tree vs credited). The `-600` arms train with `compact_tokens = 600`
(docs/credit.md, second design, meant to let some rollouts compact and some not; as run 1 of 32 did,
so `credited-600 - outcome-600` differs in a few helpers and summaries, not in the rule);
`credited-600 - outcome` is mostly the compaction threshold RL ran at (evaluation stays at 200).
The `-300` arms (the third design) train at `compact_tokens = 300`, where a
group mixes rollouts that compact and that do not: `credited-300 - outcome-300` is the credit rule's
comparison."""

_POLICY = re.compile(r"(?P<arm>.+)-s(?P<seed>\d+)")
ARM_ORDER = (
    "cold-start", "exclude", "outcome", "credited", "credited-tree",
    "outcome-600", "credited-600", "outcome-300", "credited-300",
)  # fmt: skip
"""The order of the policy rows (other arms after these, by name)."""


def ordered(names: Sequence[str]) -> list[str]:
    """Policy names by arm (`ARM_ORDER`), then seed."""

    def key(name: str) -> tuple[int, str, int]:
        m = _POLICY.fullmatch(name)
        arm, seed = (m["arm"], int(m["seed"])) if m else (name, -1)
        return (ARM_ORDER.index(arm) if arm in ARM_ORDER else len(ARM_ORDER), arm, seed)

    return sorted(names, key=key)


def replicates(names: Sequence[str]) -> dict[str, dict[int, str]]:
    """Policy folder names -> {arm: {seed: policy}}; the cold start is the arm `cold-start` whose one
    policy stands for every seed."""
    out: dict[str, dict[int, str]] = {}
    for name in names:
        if name == COLD:
            out[COLD] = {-1: COLD}
        elif m := _POLICY.fullmatch(name):
            out.setdefault(m["arm"], {})[int(m["seed"])] = name
    return out


def _pairs(reps: Mapping[str, Mapping[int, str]], base: str, other: str) -> list[tuple[str, str]]:
    a, b = reps.get(base, {}), reps.get(other, {})
    if base == COLD and a:
        return [(COLD, b[s]) for s in sorted(b)]
    return [(a[s], b[s]) for s in sorted(set(a) & set(b))]


def policy_rows(outcomes: Mapping[str, Sequence[Outcome]], harness: str) -> list[list[str]]:
    """[policy, Pass@1, mean score, statuses] for every policy with outcomes through `harness`."""
    rows = []
    for policy, outs in outcomes.items():
        mine = [o for o in outs if o.harness == harness]
        if not mine:
            continue
        statuses = ", ".join(f"{k} {v}" for k, v in sorted(Counter(o.status for o in mine).items()))
        n = len(mine)
        pass1, score = sum(o.passed for o in mine) / n, sum(o.score for o in mine) / n
        rows.append([policy, f"{pass1:.3f}", f"{score:.3f}", f"{statuses} (n {n})"])
    return rows


def comparison_rows(outcomes: Mapping[str, Sequence[Outcome]], harness: str, **kw: Any) -> list[list[str]]:
    """[other - base (seeds), mean score difference [interval], Pass@1 difference [interval]] for
    every `COMPARISONS` entry whose two sides both ran."""
    reps = replicates(list(outcomes))
    rows = []
    for base, other in COMPARISONS:
        pairs = _pairs(reps, base, other)
        if not pairs:
            continue
        cells = [f"{other} - {base} ({len(pairs)} seed{'s' if len(pairs) > 1 else ''})"]
        metrics: tuple[Metric, ...] = ("score", "passed")
        for m in metrics:
            sides = [
                (
                    [o for o in outcomes[a] if o.harness == harness],
                    [o for o in outcomes[b] if o.harness == harness],
                )
                for a, b in pairs
            ]
            s = pooled(sides, metric=m, **kw)
            cells.append(f"{signed(s['difference'])} [{signed(s['lo'])}, {signed(s['hi'])}]")
        rows.append(cells)
    return rows


RL_HEADER = (
    "RL rollouts", "compacted", "groups mixed", "summaries used", "helpers used",
    "credit moved", "summary A credited / outcome",
)  # fmt: skip


def read_rollouts(folder: Path) -> list[Rollout]:
    """Every rollout below `folder` (an arm's `rollouts/`), calls included."""
    from harnessrl.formats.rollout_dir import read_rollout

    return [read_rollout(f) for f in rollout_folders(folder)]


def rl_counts(rollouts: Sequence[Rollout]) -> dict[str, int]:
    """What one arm's RL rollouts held (`harnessrl.trace.segments`): rollouts; those with a summary a
    later step ran on; GRPO groups (`Rollout.group_id`) where some compacted and some did not; and
    summaries and sub-agent instances, made and used."""
    from harnessrl.trace.build import trace_rollout

    n: Counter[str] = Counter()
    by_group: dict[str, set[bool]] = {}
    for rollout in rollouts:
        segs = trace_rollout(rollout).segments
        compacted = any(s.kind == "compaction" and s.used for s in segs)
        n["rollouts"] += 1
        n["compacted"] += compacted
        for kind in ("compaction", "subagent"):
            mine = [s for s in segs if s.kind == kind]
            n[kind] += len(mine)
            n[kind + "_used"] += sum(bool(s.used) for s in mine)
        by_group.setdefault(rollout.group_id or rollout.rollout_id, set()).add(compacted)
    n["groups"] = len(by_group)
    n["mixed"] = sum(len(seen) == 2 for seen in by_group.values())
    return dict(n)


def _on_summaries(
    samples: Sequence[Any], layouts: Sequence[Any], advantages: Sequence[Any]
) -> tuple[float, int]:
    """(sum of the advantages, count) over the trained tokens of summary (compaction) segments."""
    import torch

    from harnessrl.rl.credit import segment_of_tokens

    total, n = 0.0, 0
    for sample, layout, adv in zip(samples, layouts, advantages, strict=True):
        ids = [k for k, seg in enumerate(sample.segments) if seg.kind == "compaction"]
        mask = layout.loss_mask & torch.isin(
            segment_of_tokens(sample, layout), torch.tensor(ids, dtype=torch.long)
        )
        total, n = total + float(adv[mask].sum()), n + int(mask.sum())
    return total, n


def credit_moved(rollouts: Sequence[Rollout], cfg: TransferSections) -> dict[str, float]:
    """What segment credit does to an arm's RL batches, recomputed from its rollouts with `cfg`, the
    arm's config (`transfer.arm_config`; the steps' batches as the loop built them, a rollout's step
    from its id, `formats.rollout_dir.rollout_step`), under both rules whatever the arm trained with:
    `moved`, the mean over steps of `weight/credit_differs` (the share of the step's loss weight on
    tokens whose `credited` advantage is not the `outcome` one); `summary_credited` and
    `summary_outcome`, the mean advantage on summary tokens under each (over all steps' tokens)."""
    from harnessrl.rl.algo import SegmentMode, build_algorithm, credit_differs
    from harnessrl.rl.packing import layout_tree
    from harnessrl.train.batch import trainable_batch

    t = cfg.train
    steps: dict[int, list[Rollout]] = {}
    for r in rollouts:
        step = rollout_step(r.rollout_id)
        steps.setdefault(-1 if step is None else step, []).append(r)  # -1: ids the loop did not make
    rules: tuple[SegmentMode, ...] = ("credited", "outcome")
    moved, summary = [], {rule: [0.0, 0] for rule in rules}
    for step in sorted(steps):
        batch = trainable_batch(steps[step], cfg)
        samples = batch.samples
        layouts = [layout_tree(s) for s in samples]
        for rule in rules:
            adv = build_algorithm(t.algorithm, t.advantage, rule).targets(samples, layouts).advantages
            total, n = _on_summaries(samples, layouts, adv)
            summary[rule][0] += total
            summary[rule][1] += n
            if rule == "credited":
                moved.append(credit_differs(t.algorithm, t.advantage, samples, layouts, None, adv))
    out = {"moved": sum(moved) / len(moved) if moved else 0.0}
    return out | {f"summary_{rule}": acc[0] / acc[1] if acc[1] else 0.0 for rule, acc in summary.items()}


def rl_rows(run: Path, cfg: TransferSections | None = None) -> list[list[str]]:
    """[run, `RL_HEADER`...] for every `arm-*` folder of `run` with RL rollouts, in `ordered` order;
    the last two (`credit_moved`: what `credited` does or would do to the arm's own batches) for
    the GRPO arms of `cfg` that train segments (`outcome`, `credited`; "-" otherwise)."""
    from harnessrl.experiments.transfer import arm_config

    names = ordered([p.name.removeprefix("arm-") for p in run.glob("arm-*") if (p / "rollouts").is_dir()])
    rows = []
    for name in names:
        folder = run / f"arm-{name}"
        rollouts = read_rollouts(folder / "rollouts")
        c = rl_counts(rollouts)
        if not c.get("rollouts"):
            continue
        moved = summary = "-"
        m = _POLICY.fullmatch(name)
        if cfg is not None and m and m["arm"] in cfg.transfer.arms:
            arm = arm_config(cfg, m["arm"], int(m["seed"]), cfg.engine.model, folder)
            if arm.train.segments != "exclude" and arm.train.algorithm == "grpo":
                got = credit_moved(rollouts, arm)
                moved = f"{got['moved']:.3f}"
                summary = f"{got['summary_credited']:+.3f} / {got['summary_outcome']:+.3f}"
        rows.append([
            name, str(c["rollouts"]), str(c["compacted"]), f"{c['mixed']} of {c['groups']}",
            f"{c.get('compaction_used', 0)} of {c.get('compaction', 0)}",
            f"{c.get('subagent_used', 0)} of {c.get('subagent', 0)}", moved, summary,
        ])  # fmt: skip
    return rows


def markdown(outcomes: Mapping[str, Sequence[Outcome]], **kw: Any) -> str:
    """Both tables for every harness the outcomes hold, as markdown."""
    lines: list[str] = []
    for h in sorted({o.harness for outs in outcomes.values() for o in outs}):
        lines += [f"### {h}", "", "| policy | Pass@1 | mean score | statuses |", "|---|---|---|---|"]
        lines += ["| " + " | ".join(r) + " |" for r in policy_rows(outcomes, h)]
        rows = comparison_rows(outcomes, h, **kw)
        if rows:
            lines += ["", "| difference (paired over tasks, 95%) | mean score | Pass@1 |", "|---|---|---|"]
            lines += ["| " + " | ".join(r) + " |" for r in rows]
        lines.append("")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run", type=Path, help="the experiment's out_dir (e.g. runs/credit)")
    ap.add_argument("--resamples", type=int, default=10_000)
    ap.add_argument(
        "--config",
        type=Path,
        help="the run's config: adds what credit does to each segment-training arm's batches",
    )
    args = ap.parse_args(argv)
    folders = ordered([p.parent.name for p in (args.run / "eval").glob("*/eval.json")])
    if not folders:
        raise SystemExit(f"{args.run}/eval: no eval/<policy>/eval.json yet")
    outcomes = {p: read_outcomes(args.run, p) for p in folders}
    print(markdown(outcomes, resamples=args.resamples))
    cfg = None
    if args.config:
        cfg = TransferSections.model_validate(tomllib.loads(args.config.read_text(encoding="utf-8")))
    rows = rl_rows(args.run, cfg)
    if rows:
        print("### RL rollouts\n\n| run | " + " | ".join(RL_HEADER) + " |\n|" + "---|" * (len(RL_HEADER) + 1))
        print("\n".join("| " + " | ".join(r) + " |" for r in rows))


if __name__ == "__main__":
    main()
