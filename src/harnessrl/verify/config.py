"""Config sections of `verify/`: checker time limit, hybrid weights, the rubric judge.

Assembled into `harnessrl.config.Config`, which re-exports them. A section module imports only
pydantic, `Section` and other section modules, so `harnessrl.config` never imports what they configure.
"""

from __future__ import annotations

from pydantic import Field, field_validator

from harnessrl.config_section import Section


class JudgeConfig(Section):
    base_url: str = "http://127.0.0.1:8000/v1"
    """OpenAI-compatible endpoint of the rubric judge."""
    model: str = "judge"
    """Model name sent to the judge endpoint."""
    api_key_env: str = "HARNESSRL_JUDGE_API_KEY"
    """Environment variable holding the judge's API key (may be unset for local servers)."""
    max_retries: int = 2
    """Retries when the judge's answer is not in the form asked, or its request failed or timed out
    (a refusal of the request for its content is not retried)."""
    timeout_s: float = 60.0
    """Per-request timeout."""


class VerifyConfig(Section):
    checker_timeout_s: float = 120.0
    """Default wall-clock limit of one code-checker run (a task may set its own)."""
    code_weight: float = 0.7
    """Weight of the code score for hybrid tasks."""
    rubric_weight: float = 0.3
    """Weight of the rubric score for hybrid tasks."""
    judge: JudgeConfig = Field(default_factory=JudgeConfig)
    """The rubric judge (rubric and hybrid tasks)."""
    allow_shell_entries: bool = False
    """Train on tasks scored by their own non-canonical `reward.sh` (`Checker.shell_entry`). Off by
    default: programs such a script runs from the workspace (pytest loads the agent's `conftest.py`)
    share its stdout while it runs and can change its answer (docs/SECURITY.md), so training refuses
    them with a message naming them. Evaluation runs them either way (`reward_detail.code.mode` is
    `shell`)."""
    reward_range: tuple[float, float] | None = (0.0, 1.0)
    """The scores a task's checker or verifier may give. A score outside it is refused: the rollout
    scores 0 with the reason (`verifier_error`, trained as the policy's failure), since a checker that
    reads a number from the agent's workspace (a results file, a count) would otherwise pay whatever
    the agent wrote there. None: any finite score counts (a checker with its own scale)."""

    @field_validator("reward_range")
    @classmethod
    def _ordered(cls, v: tuple[float, float] | None) -> tuple[float, float] | None:
        if v is not None and not v[0] <= v[1]:
            raise ValueError(f"verify.reward_range must be [low, high] with low <= high, got {list(v)}")
        return v

    allow_verifier_network: bool = False
    """Give the network to the verifier of a task that says its verifier needs it (Harbor's per-phase
    network policy: `[verifier] network_mode = "public"`, or a public environment without a verifier
    override; `Checker.network`), in its own sandbox (the agent's never gets it). Off by default: such
    tasks fail before any rollout with a message naming them."""
