"""The shared data model: plain records that cross every boundary of harnessrl.

Nothing heavy is imported here (no torch, no transformers): task loaders, the proxy, the trace builder
and the trainer all speak these types. Records are pydantic v2 models so that they round-trip through
JSON/JSONL exactly (`model_dump_json` / `model_validate_json`); hot paths build them with
`model_construct` to skip validation.

Errors are typed by the boundary they cross (task, sandbox, harness, engine, verifier, request) so
that the rollout runner can turn each into a RolloutStatus: a bad rollout is data, not a crash.
"""

from __future__ import annotations

import enum
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

# The prefix-tree samples live in their own module too (trace/ makes them, rl/ trains them).
from harnessrl.samples import SegmentInfo as SegmentInfo
from harnessrl.samples import SegmentKind as SegmentKind
from harnessrl.samples import TreeNode as TreeNode
from harnessrl.samples import TreeSample as TreeSample

# The task records live in their own module (this one stays short); they are part of this model.
from harnessrl.task_types import Checker as Checker
from harnessrl.task_types import RubricRule as RubricRule
from harnessrl.task_types import Task as Task
from harnessrl.task_types import TaskEnvironment as TaskEnvironment
from harnessrl.task_types import TaskFile as TaskFile
from harnessrl.task_types import safe_relpath as safe_relpath

# --------------------------------------------------------------------------------------------------
# Errors, named by the boundary they cross
# --------------------------------------------------------------------------------------------------


class HarnessRLError(Exception):
    """Base class of every error harnessrl raises on purpose."""


class TaskError(HarnessRLError):
    """A task (or task set) is malformed. `where` names the file and, when known, the line."""

    def __init__(self, message: str, where: str | None = None, line: int | None = None) -> None:
        self.where = where
        self.line = line
        loc = where if where is not None else ""
        if line is not None:
            loc = f"{loc}:{line}"
        super().__init__(f"{loc}: {message}" if loc else message)
        self.message = message


def refuse_unless(allow: bool, ids: list[str], what: str, by_default: str, switch: str, to: str) -> None:
    """Raise the TaskError of a run that refuses the tasks `ids` until the config switch `allow` is on
    (nothing to raise when `ids` is empty or `allow`):
    `N task(s) <what>: <ids>. <by default>; leave them out, or set <switch>=true (-o ...) <to>`."""
    if not ids or allow:
        return
    named = ", ".join(ids[:10]) + (f" and {len(ids) - 10} more" if len(ids) > 10 else "")
    raise TaskError(
        f"{len(ids)} task(s) {what}: {named}. {by_default}; leave them out, or set {switch}=true "
        f"(-o {switch}=true) {to}"
    )


class SandboxError(HarnessRLError):
    """A sandbox could not be created, entered or destroyed."""


class SandboxLost(SandboxError):
    """The sandbox died while a command ran in it (its agent stopped answering). Untrusted code was
    running, and a command can end its own sandbox, so this is never taken as the host's fault."""


class ImageError(TaskError):
    """A task's image could not be had: not in a local store and not pullable, or its Dockerfile
    failed to build. One line that names the image (and the failing step) and how to provide it.
    A TaskError: every command that refuses a task set before any rollout prints it."""


class HarnessError(HarnessRLError):
    """A harness could not be installed or launched, crashed, or produced unreadable output."""


class EngineError(HarnessRLError):
    """The inference engine failed to generate (or to load / update weights)."""


class VerifierError(HarnessRLError):
    """A checker or judge could not produce a score (raised, hung, printed garbage)."""


class RequestError(HarnessRLError):
    """A model-API request that the proxy cannot honour; becomes a clean 4xx in that API's shape."""

    def __init__(
        self, message: str, status: int = 400, param: str | None = None, code: str | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.param = param
        self.code = code
        """Machine-readable error code where the API has one (OpenAI `context_length_exceeded`)."""


# --------------------------------------------------------------------------------------------------
# Chat
# --------------------------------------------------------------------------------------------------


class ToolCall(BaseModel):
    """A tool call made by the assistant."""

    id: str = ""
    """Call id as the API knows it (ignored when matching history: harnesses rewrite ids)."""
    name: str
    """Tool name."""
    arguments: dict[str, Any] = Field(default_factory=dict)
    """Parsed JSON arguments. Freeform (custom) tools carry their text as {"input": ...}."""
    type: Literal["function", "custom"] = "function"
    """function = JSON arguments; custom = freeform text input (Codex `apply_patch`)."""


class ToolSpec(BaseModel):
    """A tool offered to the model."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})
    """JSON schema of the arguments."""
    type: Literal["function", "custom"] = "function"


Role = Literal["system", "developer", "user", "assistant", "tool"]


class ChatMessage(BaseModel):
    """One canonical chat message; every dialect is parsed into a list of these."""

    role: Role
    content: str = ""
    """Text content (blocks are joined; non-text blocks are rejected upstream)."""
    reasoning: str | None = None
    """Assistant reasoning (`<think>` / thinking blocks)."""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    """Assistant tool calls."""
    tool_call_id: str | None = None
    """For role=tool: the id of the call this answers."""
    name: str | None = None
    """For role=tool: the tool's name, when known."""


# --------------------------------------------------------------------------------------------------
# Model calls and rollouts
# --------------------------------------------------------------------------------------------------

FinishReason = Literal["stop", "length", "abort", "error"]
RenderMode = Literal["spliced", "rendered", "retokenized"]


DialectName = Literal["anthropic", "openai_chat", "openai_responses", "gemini"]
"""The model APIs the proxy speaks, by the name `ModelCall.dialect` records: the one list of them
(`proxy.dialects.DIALECTS` has one entry per name, and harness adapters declare theirs with it;
`tests/test_harness_registry.py` checks both)."""
DIALECT_NAMES: tuple[str, ...] = get_args(DialectName)


class ModelCall(BaseModel):
    """One model call captured by the proxy: exactly what was sampled, with sampling log-probs."""

    call_id: str
    rollout_id: str
    index: int
    """Order of arrival within the rollout (0-based)."""
    dialect: str
    """A `DialectName`: anthropic | openai_chat | openai_responses | gemini."""
    requested_model: str = ""
    """Model name the harness asked for (sub-agents often ask for another)."""
    prompt_ids: list[int]
    """Exact prompt token ids fed to the engine."""
    output_ids: list[int]
    """Exact sampled token ids."""
    output_logprobs: list[float]
    """Log-prob of each sampled token at sampling time (one per output id)."""
    finish_reason: FinishReason = "stop"
    render: RenderMode = "rendered"
    """spliced = history ids reused from an earlier call; rendered = first call / no earlier history;
    retokenized = had history that could not be matched, rendered from scratch."""
    spliced_from: str | None = None
    """call_id whose prompt+output ids this call's prompt starts with (when spliced)."""
    system_digest: str = ""
    """Digest of the system prompt (sub-agent detection)."""
    tools_digest: str = ""
    """Digest of the tool set (sub-agent detection)."""
    tool_names: list[str] = Field(default_factory=list)
    """Names of the tools offered, in order (what a changed tool set added or removed)."""
    request_digest: str = ""
    """Digest of the request body (retry de-duplication)."""
    replay_of: str | None = None
    """Set when this call was answered by replaying an earlier call's response (a retry)."""
    headers: dict[str, str] = Field(default_factory=dict)
    """Request headers of interest (user-agent, x-stainless-retry-count, session ids)."""
    text: str = ""
    """Parsed assistant text."""
    reasoning: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)
    """Hints for the trace builder, e.g. "compaction_request", "stream"."""
    started_at: float = 0.0
    finished_at: float = 0.0
    partial: bool = False
    """The client disconnected before the response was delivered."""
    error: str | None = None
    notes: list[str] = Field(default_factory=list)
    """What the proxy changed about this call, in words: max_tokens lowered, images replaced, tool
    calls dropped (`tool_choice: none`, `parallel_tool_calls: false`), an unknown tool called. Each
    also sets a tag (`max_tokens_lowered`, `images_replaced`, `tool_calls_dropped`, `unknown_tool`)."""
    replaced_images: int = 0
    """Image parts of the request replaced by a text placeholder (the policy reads text only)."""
    model_id: str = ""
    """The engine's model id (`engine.model_id`: `SmolLM2-135M-Instruct`, `tiny-qwen3`, a checkpoint
    folder, `scripted`); empty in records written before it was recorded."""
    tokenizer: str = ""
    """Where the tokenizer of these ids loads from: `qwen3` or a folder holding `tokenizer.json`
    (`chat.tokenizers.tokenizer_spec`); `harnessrl tree show` decodes with it. Empty: unknown."""
    tokenizer_digest: str = ""
    """`chat.tokenizers.vocab_digest` of that tokenizer: decoding with one of another digest is refused."""
    weights_version: int | None = None
    """The engine's weights version the output was sampled with (bumped by each `update_weights`;
    `GenerationResult.meta`, else the engine's current one); None when the engine keeps no version
    or nothing was sampled. Asynchronous training measures each rollout's staleness against it
    (`train.staleness`)."""


class RolloutStatus(enum.StrEnum):
    """Every rollout ends in exactly one of these (DESIGN invariant 3)."""

    OK = "ok"
    TIMEOUT = "timeout"
    HARNESS_ERROR = "harness_error"
    SANDBOX_ERROR = "sandbox_error"
    ENGINE_ERROR = "engine_error"
    VERIFIER_ERROR = "verifier_error"
    FILTERED = "filtered"


WHITEBOX = "whitebox"
"""The family of the configurable white-box harness (`whitebox:<code>`, `harnesses/whitebox`)."""


class HarnessName(BaseModel):
    """A harness name, parsed in this one place: `codex` is family `codex`; a parametrised family is
    `<family>:<argument>` (`whitebox:01220`: family `whitebox`, argument `01220`)."""

    model_config = ConfigDict(frozen=True)

    family: str
    arg: str = ""
    """The family's argument ("" for a plain harness)."""

    @classmethod
    def parse(cls, name: str) -> HarnessName:
        """ValueError for an empty family or an empty argument after `:`."""
        family, sep, arg = name.partition(":")
        if not family or (sep and not arg):
            raise ValueError(f"a harness name is <name> or <family>:<argument>, got {name!r}")
        return cls(family=family, arg=arg)

    @classmethod
    def whitebox(cls, code: str) -> str:
        """The name of white-box configuration `code` (`01220` -> `whitebox:01220`): the one place such
        a name is built (`scaling.harness_name` checks the code first)."""
        return str(cls(family=WHITEBOX, arg=code))

    @classmethod
    def arg_of(cls, name: str, family: str) -> str | None:
        """The argument of `name` when it is a member of `family` (`whitebox:01220` -> `01220`), else None."""
        try:
            parsed = cls.parse(name)
        except ValueError:
            return None
        return parsed.arg if parsed.family == family and parsed.arg else None

    def __str__(self) -> str:
        return f"{self.family}:{self.arg}" if self.arg else self.family


def group_id(task_id: str, harness: str) -> str:
    """The GRPO group of a rollout: one (task, harness configuration) pair, `<task id>/<harness>`."""
    return f"{task_id}/{harness}"


WORKER_LOST = "rollout worker died"
"""Start of the `status_reason` of a rollout whose Ray worker died under it on its last try
(`sandbox_error`, infrastructure: never trained; `outcomes()` counts them as `lost`)."""


class Rollout(BaseModel):
    """One task run through one harness: its calls, reward and status."""

    rollout_id: str
    task_id: str
    harness: str
    """Harness name, e.g. `claude-code`, `codex`, `openclaw`, `whitebox:<config>`."""
    group_id: str = ""
    """GRPO group: one (task, harness configuration) pair (`group_id(task_id, harness)`)."""
    calls: list[ModelCall] = Field(default_factory=list)
    reward: float | None = None
    reward_detail: dict[str, Any] = Field(default_factory=dict)
    status: RolloutStatus = RolloutStatus.OK
    status_reason: str = ""
    """Human-readable reason; for FILTERED, the filter name (e.g. no_trainable_calls, stale)."""
    fault: Literal["", "policy", "infra"] = ""
    """Who caused a failure. `policy`: anything the agent's code, its requests or its workspace
    could have caused (a timeout, the harness failing after talking to the model, the sandbox dying
    under its commands, a prompt over the context after the first call, a call that could not be
    recorded, the checker failing on its workspace, a workspace over the caps, and any exception
    while reading what the harness produced once it was launched): trained with reward 0 under
    `train.failures`, so that no failure pays better than an honest 0. `infra`: what happened
    before untrusted code ran or outside its reach (sandbox creation, engine faults, a judge that
    cannot answer at all, harness set-up, our own bugs before the launch): never trained. "" while
    ok."""
    exit_code: int | None = None
    final_message: str = ""
    started_at: float = 0.0
    ended_at: float = 0.0
    workdir: str = ""
    """Directory holding this rollout's artifacts."""
    timings: dict[str, float] = Field(default_factory=dict)
    """Seconds per phase: `agent` (sandbox + harness + calls), `verify` (checker and judge)."""
    node: str = ""
    """Where its sandbox ran: the Ray node's address (`rollout.backend = "ray"`); "" on the local
    asyncio backend."""
    attempts: int = 1
    """Times it was started: the Ray backend runs a rollout again when its worker dies
    (`rollout.ray.retries`); a rollout lost with its last worker (`WORKER_LOST`) counts the tries made."""
    artifacts_missing: bool = False
    """The driver found no `rollout.json` in the rollout's folder after its worker wrote it (workers
    on other machines whose `rollout.out_dir` is not a folder the driver shares)."""

    @property
    def status_label(self) -> str:
        """`ok`, `timeout`, ... or `filtered:<reason>`."""
        if self.status is RolloutStatus.FILTERED:
            return f"filtered:{self.status_reason}"
        return self.status.value


# --------------------------------------------------------------------------------------------------
# Prefix trees (trace/ produces them, rl/ consumes them)
# --------------------------------------------------------------------------------------------------


# TreeNode, SegmentInfo, SegmentKind and TreeSample live in `harnessrl.samples` (imported above).
