"""Harbor task folders (Terminal-Bench 2.0 and Harbor's adapters): one task, or a dataset of them.

    task/
      task.toml          # limits and policies (`harbor_config.TaskToml`)
      instruction.md     # -> Task.prompt
      environment/       # Dockerfile (and what it copies in) -> Task.environment.build_context
      tests/test.sh      # the verifier -> Task.checker (kind "harbor"; every file of tests/)
      solution/solve.sh  # the oracle -> Task.reference

Mapping onto `harnessrl.types.Task`: id = the folder's name (`[task] name` is kept in metadata);
split = the dataset folder's name (a lone task: its parent's); `[agent] timeout_sec` -> `timeout_s`;
`[verifier] timeout_sec`, `env` and its network policy -> the checker's `timeout_s`, `env`, `network`;
`[environment]` (image, build context, workdir, cpus, memory, storage, env, `[agent] user`, whether
the agent asks for the internet) -> `Task.environment` (`TaskEnvironment`); the workspace is where
the agent starts, `input_mount_dir` = `workdir` (default `/app`, Harbor's usual WORKDIR), empty: the
image brings the files. A task with neither `docker_image` nor `environment/Dockerfile` runs on the
host's root (`TaskEnvironment.host_root`), like every ClawGym task.

Refused, each as a TaskError naming the task's file, the line and the field (`harbor_config.unsupported`):
unknown keys, what harnessrl cannot honour (GPUs, an internet allow-list, MCP servers, a separate
verifier image, multi-step tasks, host variables in env values ...), a `docker-compose.yaml` (compose
environments are not supported), and missing or empty `instruction.md` or `tests/test.sh`. Network:
harnessrl's default is offline; `allow_internet = true` (or `network_mode = "public"`) marks the agent
as wanting the internet (`TaskEnvironment.internet`, refused for training by `refuse_internet`), the
verifier's own policy sets `Checker.network`. Symlinks anywhere in the task are rejected.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from harnessrl.tasks.files import scan_dir
from harnessrl.tasks.folders import load_each, try_load
from harnessrl.tasks.harbor_config import (
    TaskToml,
    agent_internet,
    resolved_size,
    unsupported,
    verifier_internet,
)
from harnessrl.types import Checker, Task, TaskEnvironment, TaskError, TaskFile, refuse_unless

DEFAULT_WORKDIR = "/app"
"""Where the workspace is mounted when `task.toml` names no `workdir` (Harbor images' usual WORKDIR)."""
COMPOSE_FILES = ("docker-compose.yaml", "docker-compose.yml", "compose.yaml", "compose.yml")


def is_harbor_task(path: Path) -> bool:
    """A folder holding `task.toml` (used by layout detection)."""
    return path.is_dir() and (path / "task.toml").is_file()


def _line_of(text: str, dotted: str) -> int | None:
    """The line of `dotted` (`environment.gpus`) in a TOML text: the key in its table, or the table's
    own header; else the nearest enclosing one that is there. None: not in the text (a default)."""
    lines = text.splitlines()
    parts = dotted.split(".")
    for cut in range(len(parts) - 1, -1, -1):
        table, key = ".".join(parts[:cut]), parts[cut]
        current = ""
        for i, line in enumerate(lines):
            header = re.fullmatch(r"\[\[?\s*([^\]]+?)\s*\]\]?", line.strip())
            if header:
                current = header[1]
                if current == (f"{table}.{key}" if table else key):
                    return i + 1
            elif current == table and re.match(rf'\s*"?{re.escape(key)}"?\s*=', line):
                return i + 1
    return None


def _read_toml(path: Path) -> tuple[TaskToml, str]:
    text = _read_text(path)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        at = re.search(r"at line (\d+)", str(e))
        raise TaskError(
            f"not valid TOML: {str(e).split(' (at line')[0]}", str(path), int(at[1]) if at else None
        ) from None
    try:
        cfg = TaskToml.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        field = ".".join(str(p) for p in err["loc"])
        why = "unknown field" if err["type"] == "extra_forbidden" else err["msg"]
        raise TaskError(f"`{field}`: {why}", str(path), _line_of(text, field)) from None
    return cfg, text


def _read_text(path: Path) -> str:
    if path.is_symlink() or not path.is_file():
        raise TaskError(f"missing {path.name}", str(path))
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise TaskError("not UTF-8 text", str(path)) from None


def _check_supported(cfg: TaskToml, text: str, toml: Path) -> None:
    problems = unsupported(cfg)
    if problems:
        field, why = problems[0]
        more = (
            f" (and {len(problems) - 1} more: {', '.join(f for f, _ in problems[1:])})"
            if len(problems) > 1
            else ""
        )
        raise TaskError(f"`{field}`: {why}{more}", str(toml), _line_of(text, field))


def _environment(cfg: TaskToml, task_dir: Path) -> TaskEnvironment:
    env_dir = task_dir / "environment"
    if env_dir.exists() or env_dir.is_symlink():
        scan_dir(env_dir)  # no symlinks or special files in what an image is built from
        for name in COMPOSE_FILES:
            if (env_dir / name).exists():
                raise TaskError(
                    "docker-compose environments are not supported (one image per task)", str(env_dir / name)
                )
    dockerfile = env_dir / "Dockerfile"
    section = cfg.environment
    memory, _ = resolved_size(section.memory, section.memory_mb, "memory")
    storage, _ = resolved_size(section.storage, section.storage_mb, "storage")
    return TaskEnvironment(
        image=section.docker_image,
        build_context=env_dir if dockerfile.is_file() else None,
        build_timeout_s=section.build_timeout_sec,
        workdir=section.workdir,
        cpus=section.cpus,
        memory_mb=memory,
        storage_mb=storage,
        env=dict(section.env),
        user=cfg.agent.user,
        internet=agent_internet(cfg),
    )


def _checker(cfg: TaskToml, task_dir: Path) -> Checker:
    tests = task_dir / "tests"
    if not (tests / "test.sh").is_file() or (tests / "test.sh").is_symlink():
        raise TaskError("missing tests/test.sh (the verifier)", str(tests / "test.sh"))
    if not (tests / "test.sh").read_bytes().strip():
        raise TaskError("tests/test.sh is empty", str(tests / "test.sh"))
    return Checker(
        files=scan_dir(tests, prefix="tests/"),
        entry="tests/test.sh",
        kind="harbor",
        timeout_s=cfg.verifier.timeout_sec,
        env=dict(cfg.verifier.env),
        network=verifier_internet(cfg),
    )


def _reference(task_dir: Path) -> tuple[TaskFile | None, list[str]]:
    """solution/solve.sh, and the other files of solution/ (a shell-tool replay has the script only)."""
    solution = task_dir / "solution"
    if not solution.exists() and not solution.is_symlink():
        return None, []
    files = scan_dir(solution, prefix="solution/")
    script = next((f for f in files if f.path == "solution/solve.sh"), None)
    return script, [f.path for f in files if f is not script]


def _metadata(cfg: TaskToml, solution_files: list[str]) -> dict[str, Any]:
    harbor: dict[str, Any] = {"schema_version": cfg.version or cfg.schema_version}
    if cfg.task is not None:
        harbor["task"] = cfg.task.model_dump(exclude_defaults=True)
    extra = {
        "verifier_user": cfg.verifier.user,
        "solution_env": cfg.solution.env or None,
        "source": cfg.source,
        "artifacts": cfg.artifacts or None,
        "solution_files": solution_files or None,
    }
    harbor.update({k: v for k, v in extra.items() if v is not None})
    return {**{k: v for k, v in cfg.metadata.items() if k != "category"}, "harbor": harbor}


def load_harbor_task(task_dir: Path, split: str) -> Task:
    """One Harbor task folder. Raises TaskError naming the file (and line) of the first problem."""
    toml = task_dir / "task.toml"
    cfg, text = _read_toml(toml)
    _check_supported(cfg, text, toml)
    prompt = _read_text(task_dir / "instruction.md")
    if not prompt.strip():
        raise TaskError("instruction.md is empty", str(task_dir / "instruction.md"))
    environment = _environment(cfg, task_dir)
    reference, solution_files = _reference(task_dir)
    return Task(
        id=task_dir.name,
        prompt=prompt,
        split=split,
        category=str(cfg.metadata.get("category") or ""),
        grading_type="automated",
        checker=_checker(cfg, task_dir),
        input_mount_dir=environment.workdir or DEFAULT_WORKDIR,
        timeout_s=cfg.agent.timeout_sec,
        reference=reference,
        environment=environment,
        source=str(task_dir),
        metadata=_metadata(cfg, solution_files),
    )


def try_load_harbor_task(task_dir: Path, split: str) -> Task | TaskError:
    """`load_harbor_task`, with every failure as a TaskError."""
    return try_load(
        load_harbor_task, task_dir, split, (ValidationError, OSError, UnicodeDecodeError, ValueError)
    )


def is_harbor_dataset(path: Path) -> bool:
    """A folder with at least one Harbor task folder in it."""
    return path.is_dir() and any(is_harbor_task(c) for c in path.iterdir() if not c.is_symlink())


def load_harbor_dataset(path: Path) -> tuple[list[Task], list[TaskError]]:
    """Every sub-folder is one task (hidden folders and `__pycache__` skipped); split = the folder's
    name. A sub-folder without `task.toml` is rejected, never skipped silently."""
    return load_each(path, try_load_harbor_task)


def refuse_internet(tasks: Sequence[Task], allow: bool) -> None:
    """TaskError naming the tasks whose agent asks for the internet (`TaskEnvironment.internet`)
    unless `allow` (`train.allow_internet_tasks`): sandboxes have no network but the model's, so the
    reward of such a task may measure the missing network rather than the policy."""
    ids = [t.id for t in tasks if t.environment is not None and t.environment.internet]
    refuse_unless(
        allow,
        ids,
        'say their agent needs the internet (allow_internet / network_mode = "public"), which harnessrl '
        "sandboxes never give it",
        "Training refuses them by default",
        "train.allow_internet_tasks",
        "to train on them offline",
    )
