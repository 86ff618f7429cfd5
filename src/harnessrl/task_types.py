"""The task records of the shared data model (`harnessrl.types` re-exports them): a task, its files,
its checker and rubric, and the system it runs on.

Plain pydantic records, nothing heavy imported; task loaders (`tasks/`) build them, the rollout runner,
the sandbox and the verifier read them.
"""

from __future__ import annotations

import posixpath
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator


def safe_relpath(path: str) -> str:
    """Normalise a task-relative POSIX path; raise ValueError if it is absolute or escapes its root."""
    if not path or "\x00" in path:
        raise ValueError(f"empty or invalid path {path!r}")
    if path.startswith(("/", "\\")) or (len(path) > 1 and path[1] == ":"):
        raise ValueError(f"absolute path {path!r} is not allowed")
    norm = posixpath.normpath(path.replace("\\", "/"))
    if norm == ".." or norm.startswith("../") or norm == ".":
        raise ValueError(f"path {path!r} escapes the task directory")
    return norm


class TaskFile(BaseModel):
    """One file of a task: either inline `content` or a `source` file on disk to copy verbatim."""

    model_config = ConfigDict(frozen=True)

    path: str
    """Path relative to the workspace (or checker) root; never absolute, never escaping with `..`."""
    content: str | None = None
    """Inline text content (JSONL and markdown task sets)."""
    source: Path | None = None
    """A file on disk whose bytes are copied verbatim (folder task sets)."""
    executable: bool = False
    """Set the executable bit when materialised."""

    @field_validator("path")
    @classmethod
    def _check_path(cls, v: str) -> str:
        return safe_relpath(v)


class RubricRule(BaseModel):
    """One rubric rule judged by an LLM: ClawGym `rules` entries."""

    name: str
    """Short identifier of the rule."""
    file_path: str | None = None
    """Workspace file the judge reads (missing file scores 0)."""
    description: str = ""
    """What the rule checks, shown to the judge."""
    scores: dict[str, str] = Field(default_factory=dict)
    """Score level (as a string: "0", "0.25", "1") -> what that level means."""


class TaskEnvironment(BaseModel):
    """The system a task's agent runs on when the task brings its own (Harbor's `[environment]`): an
    image named as is (`image`) or built from a Dockerfile (`build_context`), with the limits the
    task asks for. A task without one (`Task.environment` None) runs on the host's read-only root
    plus the agent environment, as ClawGym tasks do; so does one with neither `image` nor
    `build_context` (`host_root`)."""

    model_config = ConfigDict(frozen=True)

    image: str | None = None
    """Image reference used as is (Harbor `docker_image`); wins over `build_context`."""
    build_context: Path | None = None
    """Folder holding `Dockerfile` and what it copies in (Harbor `environment/`), built when `image`
    is None."""
    build_timeout_s: float = 600.0
    """Wall-clock limit of one build (Harbor `build_timeout_sec`)."""
    workdir: str | None = None
    """Working folder of the agent and the verifier (Harbor `workdir`); None: the image's WORKDIR
    (`Task.input_mount_dir` says where the host-root path puts the workspace)."""
    cpus: int | None = None
    """CPUs the task asks for (None: the sandbox config's)."""
    memory_mb: int | None = None
    """Memory the task asks for, in MiB (Harbor `memory_mb`, or `memory` as "2G"; None: the config's)."""
    storage_mb: int | None = None
    """Disk the task asks for, in MiB (Harbor `storage_mb` / `storage`; None: the config's)."""
    env: dict[str, str] = Field(default_factory=dict)
    """Environment of the agent's commands (literal values only: host variables are never passed in)."""
    user: str | int | None = None
    """User the agent runs as (Harbor `[agent] user`); None: the image's default."""
    internet: bool = False
    """The task says its agent needs the internet (`allow_internet = true`, `network_mode =
    "public"`): training refuses it unless `train.allow_internet_tasks`; the agent gets none either way."""

    @property
    def host_root(self) -> bool:
        """No image: the host's read-only root plus the agent environment."""
        return self.image is None and self.build_context is None


class Checker(BaseModel):
    """How a task is scored by code. The files live outside the agent's workspace, always."""

    files: list[TaskFile] = Field(default_factory=list)
    """Checker files, paths relative to the task root (e.g. `reward/check.py`)."""
    entry: str = "reward/check.py"
    """Python file defining `grade(transcript, workspace_path) -> dict` and/or `main()`."""
    command: str | None = None
    """The original hook command (ClawGym `reward.sh`, JSONL `hook_code`), kept for reference."""
    shell_entry: str | None = None
    """`reward/reward.sh` when that script is not ClawGym's canonical wrapper (`tasks/reward_sh.py`):
    it is then the task's real entry point, to be run with bash (its last printed line is the reward)
    instead of driving `entry`. None: score by driving `entry` (the canonical wrapper only computes
    the equal-weight mean, with `float(v)` per metric)."""
    timeout_s: float = 120.0
    """Wall-clock limit for one checker run."""
    kind: Literal["clawgym", "harbor"] = "clawgym"
    """clawgym: a `.py` entry (`grade()` / `main()` / script) or a `reward.sh`; harbor: `tests/test.sh`
    run by the Harbor verifier (`verify/harbor.py`), its reward from `/logs/verifier`."""
    env: dict[str, str] = Field(default_factory=dict)
    """Environment of a Harbor verifier's `test.sh` (Harbor `[verifier] env`, literal values only)."""
    network: bool = False
    """The verifier needs the network (Harbor's per-phase network policy): refused before any
    rollout unless `verify.allow_verifier_network`."""


class Task(BaseModel):
    """One RL task: a prompt, an initial workspace, and how the final workspace is scored."""

    id: str
    """Unique within its task set."""
    prompt: str
    """The user query handed to the harness."""
    split: str = ""
    """Split name (train / test / ...), from the folder or file it was loaded from."""
    category: str = ""
    """Free-form category (ClawGym `metadata.category`, PinchBench `category`)."""
    grading_type: Literal["automated", "llm_judge", "hybrid"] = "automated"
    """automated = code checker only; llm_judge = rubric only; hybrid = weighted mix."""
    workspace: list[TaskFile] = Field(default_factory=list)
    """Initial workspace files (ClawGym `input_files/`)."""
    checker: Checker | None = None
    """Code checker; None when the task is judged by rubric only."""
    rubric: list[RubricRule] = Field(default_factory=list)
    """LLM-judge rules (ClawGym `rules`, PinchBench `## LLM Judge Rubric`)."""
    grading_weights: dict[str, float] = Field(default_factory=dict)
    """Per-task override of hybrid weights, e.g. {"automated": 0.7, "llm_judge": 0.3}."""
    input_mount_dir: str = "/root/.openclaw/workspace"
    """Where the original runs mounted the workspace (checkers may hard-code it)."""
    timeout_s: float | None = None
    """Per-task agent timeout, if the task set gives one."""
    reference: TaskFile | None = None
    """Reference solution script (run in the workspace by tests and `tasks check`), never shown to agents."""
    wrong_reference: TaskFile | None = None
    """A plausible wrong solution script (`reference/wrong.sh`): self-checks require it to lose a metric."""
    environment: TaskEnvironment | None = None
    """The system the agent runs on (Harbor tasks); None: the host's read-only root plus the agent
    environment."""
    source: str = ""
    """Where the task was loaded from (file or folder), for error messages."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Everything else the task set carried."""
