"""Task-set loaders: ClawGym folder and JSONL layouts, PinchBench markdown, detection, materialising."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from harnessrl.config import TasksConfig
from harnessrl.tasks import (
    bundled_path,
    load_configured,
    load_tasks,
    materialize_checker,
    materialize_workspace,
)
from harnessrl.tasks.rubric import rules_from_markdown
from harnessrl.types import RubricRule, Task


def accepted(source: Path | str, **kw: str) -> list[Task]:
    """The tasks `load_tasks(source, **kw)` finds, asserting it rejected none."""
    load = load_tasks(source, **kw)
    assert load.rejected == [], load.rejected
    return load.tasks


def placed(tasks: list[Task]) -> list[tuple[str, str]]:
    """(id, split) of each task, in load order."""
    return [(t.id, t.split) for t in tasks]


CHECK_PY = "def grade(transcript, workspace_path):\n    return {'a': 1.0}\n"


def make_task(split_dir: Path, name: str, query: str = "do it", category: str = "edit") -> Path:
    d = split_dir / name
    (d / "input_files" / "src").mkdir(parents=True)
    (d / "reward").mkdir()
    (d / "reference").mkdir()
    entry = {
        "task_id": name,
        "user_query": query,
        "metadata": {"category": category, "grading_type": "automated", "difficulty": "easy"},
        "input_mount_dir": "/root/.openclaw/workspace",
    }
    (d / "data_entry.json").write_text(json.dumps(entry))
    (d / "input_files" / "notes.txt").write_text("hello\n")
    run = d / "input_files" / "src" / "run.sh"
    run.write_text("#!/bin/sh\necho hi\n")
    run.chmod(0o755)
    (d / "reward" / "check.py").write_text(CHECK_PY)
    (d / "reward" / "reward.sh").write_text(
        "python3 /root/.openclaw/workspace/reward/check.py /root/.openclaw/workspace\n"
    )
    (d / "reference" / "solve.sh").write_text("echo done > out.txt\n")
    return d


def test_shared_clawgym_example(shared_fixtures: Path) -> None:
    [task] = accepted(shared_fixtures / "clawgym-format" / "example_split")
    assert task.id == "task_0000"
    assert task.split == "example_split"
    assert task.grading_type == "automated"
    assert [f.path for f in task.workspace] == ["data/loans.csv"]
    assert task.checker is not None
    assert [f.path for f in task.checker.files] == ["reward/check.py", "reward/reward.sh"]
    assert task.checker.entry == "reward/check.py"
    assert task.checker.command is not None and task.checker.command.startswith("#!/usr/bin/env bash")
    assert task.input_mount_dir == "/root/.openclaw/workspace"
    assert task.reference is None


def test_folder_layout_split_and_root(tmp_path: Path) -> None:
    for split, names in {"train": ["task_0001", "task_0000"], "test": ["task_0100"]}.items():
        for name in names:
            make_task(tmp_path / split, name)
    (tmp_path / "README.md").write_text("# not a task\n")
    tasks = accepted(tmp_path)
    assert placed(tasks) == [("task_0100", "test"), ("task_0000", "train"), ("task_0001", "train")]
    task = tasks[1]
    assert task.category == "edit"
    assert task.metadata == {"difficulty": "easy"}
    assert [(f.path, f.executable) for f in task.workspace] == [("notes.txt", False), ("src/run.sh", True)]
    assert task.reference is not None and task.reference.path == "reference/solve.sh"
    assert [t.id for t in accepted(tmp_path, split="train")] == ["task_0000", "task_0001"]
    configured = load_configured(TasksConfig(path=str(tmp_path), split="train", limit=1))
    assert [t.id for t in configured.tasks] == ["task_0000"]
    assert [t.id for t in accepted(tmp_path / "test")] == ["task_0100"]
    assert placed(accepted(tmp_path / "test" / "task_0100")) == [("task_0100", "test")]


def test_materialize_keeps_bytes_and_mode_and_hides_checker(tmp_path: Path) -> None:
    src = make_task(tmp_path / "train", "task_0000")
    (src / "input_files" / "blob.bin").write_bytes(bytes(range(256)))
    [task] = load_tasks(tmp_path / "train").tasks
    ws = tmp_path / "ws"
    written = materialize_workspace(task, ws)
    assert sorted(p.relative_to(ws).as_posix() for p in written) == ["blob.bin", "notes.txt", "src/run.sh"]
    assert (ws / "blob.bin").read_bytes() == bytes(range(256))
    assert os.stat(ws / "src" / "run.sh").st_mode & stat.S_IXUSR
    assert not os.stat(ws / "notes.txt").st_mode & stat.S_IXUSR
    assert not (ws / "reward").exists() and not (ws / "reference").exists()
    ck = tmp_path / "ck"
    materialize_checker(task, ck)
    assert (ck / "reward" / "check.py").read_text() == CHECK_PY


LEVELS = {"0": "bad", "0.5": "ok", "1": "great"}
BINARY = {"0": "the criterion is not met", "1": "the criterion is met"}


def _jsonl_record(**over: object) -> dict[str, object]:
    rec: dict[str, object] = {
        "prompt": "Summarise data.csv into out.json",
        "hook_code": "python3 reward/test.py /root/.openclaw/workspace",
        "hook_lang": "python",
        "input_files": [
            {"file_path": "data.csv", "file_format": "csv", "content": "a,b\n1,2\n"},
            {"file_path": "/root/.openclaw/workspace/cfg/x.json", "file_format": "json", "content": {"k": 1}},
            {"file_path": "reward/test.py", "file_format": "py", "content": CHECK_PY},
            {"file_path": "reward/helpers.py", "file_format": "py", "content": "X = 1\n"},
        ],
        "rules": [
            {"name": "clarity", "file_path": "out.json", "scores": {"0": "bad", "0.5": "ok", "1": "great"}}
        ],
        "category": "data",
        "macro_category": "analysis",
        "action": "summarise",
        "origin_template": "---\nid: summarise-csv-001\nname: x\n---\nbody",
    }
    rec.update(over)
    return rec


def test_jsonl_layout(tmp_path: Path) -> None:
    path = tmp_path / "syn" / "syn_task.jsonl"
    path.parent.mkdir()
    second = _jsonl_record(origin_template=None, rules=None, rule="Be concise")
    path.write_text(json.dumps(_jsonl_record()) + "\n\n" + json.dumps(second) + "\n")
    first, other = accepted(path)
    assert first.id == "summarise-csv-001"
    assert other.id == "syn_task.jsonl:3"
    assert first.split == "syn"
    assert first.grading_type == "hybrid"
    assert [(f.path, f.content) for f in first.workspace] == [
        ("data.csv", "a,b\n1,2\n"),
        ("cfg/x.json", '{"k": 1}'),
    ]
    assert first.checker is not None
    assert first.checker.entry == "reward/test.py"
    assert [f.path for f in first.checker.files] == ["reward/test.py", "reward/helpers.py"]
    assert first.rubric == [RubricRule(name="clarity", file_path="out.json", scores=LEVELS)]
    assert other.rubric == [
        RubricRule(
            name="rule_0",
            description="Be concise",
            scores={"0": "the criterion is not met", "1": "the criterion is met"},
        )
    ]
    assert first.metadata["macro_category"] == "analysis"
    assert first.metadata["action"] == "summarise"
    assert load_tasks(tmp_path / "syn").tasks[0].id == "summarise-csv-001"


PINCH = """---
id: task_07_report
name: Weekly report
category: writing
grading_type: hybrid
timeout_seconds: 180
workspace_files:
  - source: assets/sales.csv
    dest: data/sales.csv
  - path: notes.md
    content: "remember the totals"
grading_weights:
  automated: 0.6
  llm_judge: 0.4
---

## Prompt

Write report.md summarising data/sales.csv.

## Expected Behavior

A short report.

## Grading Criteria

- [ ] report exists

## Automated Checks

```python
def grade(transcript: list, workspace_path: str) -> dict:
    from pathlib import Path
    return {"exists": 1.0 if (Path(workspace_path) / "report.md").exists() else 0.0}
```

## LLM Judge Rubric

### Criterion 1: Accuracy (Weight: 60%)

**Score 1.0**: All totals right.
**Score 0.5**: Some totals right.
**Score 0.0**: Nothing right.

### Criterion 2: Clarity (Weight: 40%)

**Score 1.0**: Clear.
**Score 0.0**: Unclear.
"""


def test_pinchbench_markdown(tmp_path: Path) -> None:
    (tmp_path / "assets").mkdir()
    (tmp_path / "assets" / "sales.csv").write_text("q,total\n1,10\n")
    (tmp_path / "tasks").mkdir()
    (tmp_path / "tasks" / "task_07_report.md").write_text(PINCH)
    (tmp_path / "tasks" / "README.md").write_text("# PinchBench tasks\n")
    [task] = accepted(tmp_path / "tasks")
    assert (task.id, task.category, task.grading_type, task.timeout_s) == (
        "task_07_report",
        "writing",
        "hybrid",
        180.0,
    )
    assert task.prompt == "Write report.md summarising data/sales.csv."
    assert task.grading_weights == {"automated": 0.6, "llm_judge": 0.4}
    assert [f.path for f in task.workspace] == ["data/sales.csv", "notes.md"]
    assert task.workspace[1].content == "remember the totals"
    assert [(r.name, r.scores) for r in task.rubric] == [
        (
            "accuracy",
            {"1.0": "All totals right.", "0.5": "Some totals right.", "0.0": "Nothing right."},
        ),
        ("clarity", {"1.0": "Clear.", "0.0": "Unclear."}),
    ]
    assert task.metadata["name"] == "Weekly report"
    assert task.metadata["expected behavior"] == "A short report."
    assert task.checker is not None and task.checker.entry == "reward/check.py"
    code = task.checker.files[0].content or ""
    assert code.startswith("def grade(transcript: list, workspace_path: str) -> dict:")
    assert "def main() -> None:" in code and code.rstrip().endswith("main()")
    ws = tmp_path / "ws"
    materialize_workspace(task, ws)
    assert (ws / "data" / "sales.csv").read_text() == "q,total\n1,10\n"
    single = load_tasks(tmp_path / "tasks" / "task_07_report.md")
    assert [t.id for t in single.tasks] == ["task_07_report"]


def test_markdown_rubric_bullets_and_plain_text() -> None:
    rules = rules_from_markdown(
        "Judge these:\n- Report names the top region\n1. Uses a table\n- [ ] Uses a table\n"
    )
    assert [(r.name, r.description) for r in rules] == [
        ("report_names_the_top_region", "Report names the top region"),
        ("uses_a_table", "Uses a table"),
        ("uses_a_table_2", "Uses a table"),
    ]
    assert all(set(r.scores) == {"0", "1"} for r in rules)
    [plain] = rules_from_markdown("rule-based\n")
    assert (plain.name, plain.description) == ("rubric", "rule-based")
    assert rules_from_markdown("  \n") == []


def test_bundled_set_loads() -> None:
    load = load_tasks("bundled")
    assert Task.model_validate_json(load.tasks[0].model_dump_json()) == load.tasks[0]
    assert bundled_path().is_dir()
    assert load.rejected == []
    assert {t.split for t in load.tasks} == {"train", "test"}
    assert all(t.checker is not None and t.reference is not None for t in load.tasks)
    assert len({t.id for t in load.tasks}) == len(load.tasks)


HARBOR = Path(__file__).parent / "fixtures" / "harbor-dataset"


def test_harbor_dataset_maps_onto_tasks() -> None:
    """tests/fixtures/harbor-dataset: three Harbor tasks written for these tests (Harbor's layout and
    task.toml schema, `harbor/models/task/config.py`): one on the host root, one scored by a
    multi-metric reward.json, one whose image is built from environment/Dockerfile."""
    from harnessrl.types import Checker, TaskEnvironment, TaskFile

    tasks = accepted(HARBOR)
    assert [t.id for t in tasks] == ["dockerfile-data", "hello-world", "multi-metric"]
    assert {t.split for t in tasks} == {"harbor-dataset"}
    image, hello, metrics = tasks
    assert hello.prompt == (HARBOR / "hello-world" / "instruction.md").read_text()
    assert (hello.timeout_s, hello.input_mount_dir, hello.category, hello.workspace) == (
        120.0,
        "/app",
        "file-ops",
        [],
    )
    assert hello.environment == TaskEnvironment()
    assert hello.environment.host_root
    assert hello.checker == Checker(
        files=[
            TaskFile(
                path="tests/test.sh", source=HARBOR / "hello-world" / "tests" / "test.sh", executable=True
            )
        ],
        entry="tests/test.sh",
        kind="harbor",
        timeout_s=60.0,
    )
    ref = HARBOR / "hello-world" / "solution" / "solve.sh"
    assert hello.reference == TaskFile(path="solution/solve.sh", source=ref, executable=True)
    assert hello.metadata == {
        "author_name": "harnessrl",
        "difficulty": "easy",
        "tags": ["trivial"],
        "harbor": {"schema_version": "1.0"},
    }
    assert metrics.checker is not None
    assert [f.path for f in metrics.checker.files] == [
        "tests/score.py",
        "tests/test.sh",
        "tests/test_outputs.py",
    ]
    assert (metrics.checker.timeout_s, metrics.checker.env) == (120.0, {"SCORE_STRICT": "1"})
    assert metrics.environment == TaskEnvironment(workdir="/app", cpus=1, memory_mb=1024, storage_mb=2048)
    assert metrics.metadata["harbor"]["task"] == {
        "name": "harnessrl/multi-metric",
        "description": "Write a CSV summary; scored on two metrics.",
        "keywords": ["csv"],
    }
    assert image.environment == TaskEnvironment(
        build_context=HARBOR / "dockerfile-data" / "environment",
        build_timeout_s=300.0,
        workdir="/srv/task",
        cpus=2,
        memory_mb=2048,
        storage_mb=4096,
        env={"LANG": "C.UTF-8"},
        user="agent",
    )
    assert (image.input_mount_dir, image.timeout_s) == ("/srv/task", 200.0)
    assert not image.environment.host_root


def test_harbor_task_dataset_and_root_of_datasets_and_format(tmp_path: Path) -> None:
    import shutil

    assert placed(accepted(HARBOR / "hello-world")) == [("hello-world", "harbor-dataset")]
    shutil.copytree(HARBOR, tmp_path / "tb" / "d1")
    shutil.copytree(HARBOR / "hello-world", tmp_path / "tb" / "d2" / "hello-again")
    assert placed(accepted(tmp_path / "tb")) == [
        ("dockerfile-data", "d1"),
        ("hello-world", "d1"),
        ("multi-metric", "d1"),
        ("hello-again", "d2"),
    ]
    assert [t.id for t in load_tasks(HARBOR, fmt="harbor").tasks] == [
        "dockerfile-data",
        "hello-world",
        "multi-metric",
    ]
    assert (
        load_configured(TasksConfig(path=str(HARBOR), format="harbor", limit=1)).tasks[0].id
        == "dockerfile-data"
    )


def test_a_folder_without_tasks_is_an_error_naming_formats_and_contents(tmp_path: Path) -> None:
    import pytest

    from harnessrl.types import TaskError

    (tmp_path / "notes.txt").write_text("x")
    (tmp_path / "data").mkdir()
    with pytest.raises(TaskError) as nothing:
        load_tasks(tmp_path)
    assert str(nothing.value) == (
        f"{tmp_path}: no task found: looked for Harbor tasks (a folder with task.toml, or a dataset of "
        "them); ClawGym tasks (data_entry.json, input_files/, reward/; a task, a split or a root of "
        "splits); ClawGym *.jsonl files; PinchBench *.md tasks; it holds data/, notes.txt"
    )
    with pytest.raises(TaskError) as wrong_format:
        load_tasks(HARBOR, fmt="pinchbench")
    assert str(wrong_format.value) == (
        f"{HARBOR}: no task found: looked for PinchBench *.md tasks; it holds dockerfile-data/, "
        "hello-world/, multi-metric/"
    )
    with pytest.raises(TaskError, match=r"it is empty$"):
        load_tasks(tmp_path / "data")
