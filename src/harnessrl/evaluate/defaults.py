"""Defaults that finish on the embedded CPU engine, for the commands that sample (`eval`, `rollout`,
`train`), applied only where the configuration leaves the setting unset.

    cfg, applied = bounded_defaults(cfg, "eval", harnesses)
    echo(plan_line + applied_text(applied))   # the run's first line says which defaults applied

Unset, `engine.sampling.max_tokens` is the whole context (8,192 tokens for SmolLM2-135M) and a white-box
harness takes up to 30 steps, each asking 1,024 tokens: an untrained model's rambling replies then
cost minutes per call on a CPU, and `harnessrl eval` with two tasks ran past 15 minutes. With the
embedded engine (`engine.type = "hf"`) on the CPU, a run that does not set them gets
`CPU_MAX_TOKENS` tokens per call (the demo's and the scaling configs' ceiling: enough for a command
and its arguments) and `CPU_MAX_STEPS` steps per white-box rollout (the scaling configs allow 8, the
quickstart 3), so a rollout that never stops costs at most 640 sampled tokens. Any value the user
sets, in a config file or with `-o`, wins; other engines and devices keep the unbounded defaults.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, TypeVar

from harnessrl.evaluate.config import EvalSections
from harnessrl.evaluate.run import harness_options
from harnessrl.types import HarnessName

CPU_MAX_TOKENS = 128
"""`engine.sampling.max_tokens` on the embedded CPU engine when no configuration sets it."""
CPU_MAX_STEPS = 5
"""`max_steps` of a `whitebox:<code>` rollout on the embedded CPU engine when no option sets it."""
STEPS_OPTION = "max_steps"
"""The white-box harness's step limit (`harnesses.whitebox.adapter.OPTIONS`)."""

Scope = Literal["eval", "rollout", "train"]
S = TypeVar("S", bound=EvalSections)


def embedded_cpu(cfg: EvalSections) -> bool:
    """The embedded transformers engine on the CPU."""
    return cfg.engine.type == "hf" and cfg.engine.device == "cpu"


def bounded_defaults(cfg: S, scope: Scope, harnesses: Sequence[str] = ()) -> tuple[S, list[str]]:
    """`cfg` with the bounded defaults (module docstring) where it leaves them unset, and what was
    applied (`["engine.sampling.max_tokens = 128", "max_steps = 5 for whitebox:00000"]`). `harnesses`:
    the harnesses the command runs (`train` also bounds its harness space)."""
    if not embedded_cpu(cfg):
        return cfg, []
    applied: list[str] = []
    if "max_tokens" not in cfg.engine.sampling.model_fields_set:
        sampling = cfg.engine.sampling.model_copy(update={"max_tokens": CPU_MAX_TOKENS})
        cfg = cfg.model_copy(update={"engine": cfg.engine.model_copy(update={"sampling": sampling})})
        applied.append(f"engine.sampling.max_tokens = {CPU_MAX_TOKENS}")
    bounded = [h for h in dict.fromkeys(harnesses) if HarnessName.arg_of(h, "whitebox") is not None]
    cfg, steps = _bound_steps(cfg, scope, bounded)
    if steps:
        applied.append(f"{STEPS_OPTION} = {CPU_MAX_STEPS} for {', '.join(steps)}")
    return cfg, applied


def _bound_steps(cfg: S, scope: Scope, harnesses: list[str]) -> tuple[S, list[str]]:
    """`max_steps` where each white-box harness's options, as `scope` resolves them, lack one."""
    done: list[str] = []
    if scope == "eval":
        table = {k: dict(v) for k, v in cfg.eval.harness_options.items()}
        for h in harnesses:
            options = harness_options(cfg, h)  # the options the evaluation would run it with
            if STEPS_OPTION not in options:
                table[h] = options | {STEPS_OPTION: CPU_MAX_STEPS}
                done.append(h)
        return cfg.model_copy(update={"eval": cfg.eval.model_copy(update={"harness_options": table})}), done
    section: Any = cfg.rollout if scope == "rollout" else cfg.train
    table = {k: dict(v) for k, v in section.harness_options.items()}
    for h in harnesses:
        if STEPS_OPTION not in table.get(h, {}):
            table[h] = table.get(h, {}) | {STEPS_OPTION: CPU_MAX_STEPS}
            done.append(h)
    update: dict[str, Any] = {"harness_options": table}
    space = cfg.train.harness_space if scope == "train" else None
    if space is not None and STEPS_OPTION not in space.options:
        update["harness_space"] = space.model_copy(
            update={"options": space.options | {STEPS_OPTION: CPU_MAX_STEPS}}
        )
        done.append(f"the harness space ({space.design})")
    name = "rollout" if scope == "rollout" else "train"
    return cfg.model_copy(update={name: section.model_copy(update=update)}), done


def applied_text(applied: Sequence[str]) -> str:
    """`; defaults for the embedded CPU engine: ... (set them to change)`, or "" when none applied."""
    if not applied:
        return ""
    return f"; defaults for the embedded CPU engine: {', '.join(applied)} (set them to change)"
