"""Evaluation: Pass@1 over repeated runs, per task / category / harness (configuration); reports.

    from harnessrl.evaluate import evaluate, write_report
    report = await evaluate(cfg, tasks, harnesses=["codex", "whitebox:01220"])   # cfg: EvalSections
    write_report(report, cfg.eval.out_dir)                                       # eval.json, eval.md

`stats` holds the estimators (pure), `run` the loop over policies x harnesses x tasks x runs through
the real rollout runner, `tables` the JSON / markdown / rich output (`harnessrl eval` is
`commands.evaluate`).
"""

from harnessrl.evaluate.run import Policy, eval_seed, evaluate, parse_policy
from harnessrl.evaluate.stats import Outcome, pass_at_k, pass_hat_k, summarize
from harnessrl.evaluate.tables import markdown, rich_tables, write_report

__all__ = [
    "Outcome",
    "Policy",
    "eval_seed",
    "evaluate",
    "markdown",
    "parse_policy",
    "pass_at_k",
    "pass_hat_k",
    "rich_tables",
    "summarize",
    "write_report",
]
