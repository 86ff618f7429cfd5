"""Loaders against what upstream task sets really hold (issue 12, items 5-7).

A mount dir under the workspace root, ClawGym's canonical `reward.sh` vs a custom one, the wrapper's
`float(v)` arithmetic, exact messages for a bad `user_query` and for checker syntax errors, and
PinchBench's repository layout (`tasks/task_*.md`, `tasks/TASK_TEMPLATE.md`, `assets/`).
"""

from __future__ import annotations

import json
from pathlib import Path

from harnessrl.tasks import bundled_path, load_tasks, materialize_workspace
from harnessrl.tasks.reward_sh import CANONICAL_REWARD_SH, is_canonical_wrapper, wrapper_score

CHECK_PY = "def grade(transcript, workspace_path):\n    return {'a': 1.0}\n"


def _task(split: Path, name: str, entry: dict[str, object], reward_sh: str | None = None) -> Path:
    d = split / name
    (d / "input_files" / "data").mkdir(parents=True)
    (d / "reward").mkdir()
    (d / "data_entry.json").write_text(json.dumps(entry, indent=2) + "\n")
    (d / "input_files" / "data" / "x.csv").write_text("a,b\n")
    (d / "reward" / "check.py").write_text(CHECK_PY)
    if reward_sh is not None:
        (d / "reward" / "reward.sh").write_text(reward_sh)
    return d


def _entry(**over: object) -> dict[str, object]:
    base: dict[str, object] = {
        "task_id": "t",
        "user_query": "q",
        "metadata": {"category": "", "grading_type": "automated"},
        "input_mount_dir": "/root/.openclaw/workspace",
    }
    base.update(over)
    return base


def test_input_mount_subfolder_loads_under_the_workspace_root(tmp_path: Path) -> None:
    """Upstream mounts input files at `<root>/input`; reward.sh still names `<root>/reward/check.py`."""
    _task(tmp_path / "s", "t", _entry(input_mount_dir="/root/.openclaw/workspace/input"), CANONICAL_REWARD_SH)
    load = load_tasks(tmp_path / "s")
    assert load.rejected == []
    [task] = load.tasks
    assert task.input_mount_dir == "/root/.openclaw/workspace"
    assert [f.path for f in task.workspace] == ["input/data/x.csv"]
    assert task.metadata == {"input_mount_dir": "/root/.openclaw/workspace/input"}
    assert task.checker is not None
    assert (task.checker.entry, task.checker.shell_entry) == ("reward/check.py", None)
    materialize_workspace(task, tmp_path / "ws")
    assert (tmp_path / "ws" / "input" / "data" / "x.csv").read_text() == "a,b\n"


def test_bad_user_query_says_what_and_where(tmp_path: Path) -> None:
    split = tmp_path / "s"
    _task(split, "t1", _entry(task_id="t1", user_query=42))
    _task(split, "t2", _entry(task_id="t2", user_query="   "))
    _task(split, "t3", _entry(task_id="t3", user_query=None))
    entry = _entry(task_id="t4")
    del entry["user_query"]
    _task(split, "t4", entry)
    load = load_tasks(split)
    assert load.tasks == []
    assert [str(e) for e in load.rejected] == [
        f"{split}/t1/data_entry.json:3: `user_query` must be a string, not int",
        f"{split}/t2/data_entry.json:3: `user_query` is empty",
        f"{split}/t3/data_entry.json:3: `user_query` must be a string, not null",
        f"{split}/t4/data_entry.json: missing `user_query`",
    ]


def test_checker_syntax_error_names_file_and_line(tmp_path: Path) -> None:
    split = tmp_path / "s"
    d = _task(split, "t", _entry())
    (d / "reward" / "helpers.py").write_text("X = 1\n\ndef f(:\n    pass\n")
    jsonl = tmp_path / "j" / "syn_task.jsonl"
    jsonl.parent.mkdir()
    bad = "def grade(t, w):\n    return {'a': 1.0\n"
    rec = {"prompt": "p", "input_files": [{"file_path": "reward/test.py", "content": bad}]}
    jsonl.write_text(json.dumps({"prompt": "p", "rules": ["x"]}) + "\n" + json.dumps(rec) + "\n")
    md = tmp_path / "m" / "task_01_x.md"
    md.parent.mkdir()
    md.write_text(
        "---\nid: x\ngrading_type: automated\n---\n\n## Prompt\n\nhi\n\n"
        "## Automated Checks\n\n```python\ndef grade(t, w):\n    return {'a': 1.0}}\n```\n"
    )
    errors = [str(e) for p in (split, jsonl, md) for e in load_tasks(p).rejected]
    assert errors == [
        f"{split}/t/reward/helpers.py:3: syntax error in checker: invalid syntax",
        f"{jsonl}:2: syntax error in checker reward/test.py:2: '{{' was never closed",
        f"{md}:14: syntax error in `## Automated Checks`: unmatched '}}'",
    ]


def test_canonical_reward_sh_is_recognised() -> None:
    fixture = Path(__file__).parent / "fixtures" / "clawgym-format" / "example_split" / "task_0000"
    assert (fixture / "reward" / "reward.sh").read_text() == CANONICAL_REWARD_SH
    assert is_canonical_wrapper(CANONICAL_REWARD_SH)
    other_mount = CANONICAL_REWARD_SH.replace("/root/.openclaw/workspace", "/data/ws")
    assert is_canonical_wrapper("# scored by the mean\n" + other_mount.replace("check.py", "test.py"))
    assert not is_canonical_wrapper(CANONICAL_REWARD_SH.replace("/ len(data)", "/ 2"))
    assert not is_canonical_wrapper(CANONICAL_REWARD_SH + "echo 1.0\n")
    assert not is_canonical_wrapper(
        "python3 /root/.openclaw/workspace/reward/check.py /root/.openclaw/workspace\n"
    )
    tasks = load_tasks(bundled_path()).tasks
    assert len(tasks) == 44
    assert {t.checker.shell_entry if t.checker else "none" for t in tasks} == {None}


def test_custom_reward_sh_is_the_entry(tmp_path: Path) -> None:
    split = tmp_path / "s"
    _task(split, "canonical", _entry(task_id="canonical"), CANONICAL_REWARD_SH)
    custom = CANONICAL_REWARD_SH.replace("/ len(data)", "/ 2")
    _task(split, "custom", _entry(task_id="custom"), custom)
    d = _task(
        split,
        "script_only",
        _entry(task_id="script_only"),
        "cd /root/.openclaw/workspace\ntest -f out && echo 1\n",
    )
    (d / "reward" / "check.py").unlink()
    load = load_tasks(split)
    assert load.rejected == []
    got = {t.id: (t.checker.entry, t.checker.shell_entry, t.checker.command) for t in load.tasks if t.checker}
    assert got == {
        "canonical": ("reward/check.py", None, CANONICAL_REWARD_SH),
        "custom": ("reward/check.py", "reward/reward.sh", custom),
        "script_only": (
            "reward/reward.sh",
            "reward/reward.sh",
            "cd /root/.openclaw/workspace\ntest -f out && echo 1\n",
        ),
    }


def test_wrapper_score_is_float_of_each_value() -> None:
    assert wrapper_score({"a": "1.0", "b": " 0 ", "c": True, "d": "1e0"}) == (0.75, None)
    assert wrapper_score({"a": 1, "b": "yes"}) == (0.0, "metric 'b' is not a number: 'yes'")
    assert wrapper_score({"a": None}) == (0.0, "metric 'a' is not a number: None")
    assert wrapper_score(0.5) == (0.5, None)
    assert wrapper_score({}) == (0.0, None)
    assert wrapper_score("1.0") == (0.0, None)
    assert wrapper_score([1.0]) == (0.0, None)


PINCH = Path(__file__).parent / "fixtures" / "pinchbench-layout"


def test_pinchbench_repository_layout() -> None:
    """`tasks/task_*.md` load (not TASK_TEMPLATE.md); `source` resolves in `<repo>/assets/`."""
    for path in (PINCH, PINCH / "tasks"):
        load = load_tasks(path)
        assert load.rejected == []
        assert [(t.id, t.split, t.grading_type) for t in load.tasks] == [
            ("task_01_greeting", "tasks", "automated"),
            ("task_02_blog_summary", "tasks", "automated"),
            ("task_03_blog_rewrite", "tasks", "llm_judge"),
        ]
    greet, summary, rewrite = load_tasks(PINCH).tasks
    assert greet.prompt == "Create a file `greeting.txt` containing exactly the line `hello pinch`."
    assert greet.workspace == []
    assert [(f.path, f.source) for f in summary.workspace] == [
        ("ai_blog.txt", PINCH / "assets" / "ai_blog.txt"),
        ("inputs/sales.csv", PINCH / "assets" / "data" / "sales.csv"),
    ]
    assert summary.metadata["expected behavior"] == "The agent runs `wc -l` or reads the file and writes `4`."
    assert rewrite.checker is None
    assert [r.name for r in rewrite.rubric] == ["natural_voice", "content_preservation"]
    assert [f.path for f in rewrite.workspace] == ["ai_blog.txt"]
    template = load_tasks(PINCH / "tasks" / "TASK_TEMPLATE.md")  # named on its own, it is a task file
    assert [t.id for t in template.tasks] == ["task_XX_name"]
