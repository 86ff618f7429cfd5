"""Bad task input: each problem is a TaskError naming file and line, and the rest of the set loads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harnessrl.tasks import load_tasks, materialize_workspace
from harnessrl.types import Task, TaskError, TaskFile


def _task_dir(split: Path, name: str, reward_sh: str | None = None) -> Path:
    d = split / name
    (d / "input_files").mkdir(parents=True)
    (d / "reward").mkdir()
    entry = {"task_id": name, "user_query": "q", "metadata": {"category": "", "grading_type": "automated"}}
    (d / "data_entry.json").write_text(json.dumps(entry, indent=2))
    (d / "input_files" / "a.txt").write_text("a")
    (d / "reward" / "check.py").write_text("def grade(t, w):\n    return {'x': 0.0}\n")
    if reward_sh is not None:
        (d / "reward" / "reward.sh").write_text(reward_sh)
    return d


def loaded(path: Path, ids: list[str]) -> list[str]:
    """Load `path`, check the tasks kept are `ids` (in order), and return the rejections as text."""
    load = load_tasks(path)
    assert [t.id for t in load.tasks] == ids
    return [str(e) for e in load.rejected]


def test_folder_bad_tasks_are_rejected_rest_loads(tmp_path: Path) -> None:
    split = tmp_path / "train"
    _task_dir(
        split, "task_0000", "python3 /root/.openclaw/workspace/reward/check.py /root/.openclaw/workspace\n"
    )
    (_task_dir(split, "task_0001") / "data_entry.json").unlink()
    (_task_dir(split, "task_0002") / "data_entry.json").write_text(
        '{\n  "task_id": "x",\n  "user_query": \n}\n'
    )
    _task_dir(split, "task_0003", "python3 ../../evil/check.py /root/.openclaw/workspace\n")
    _task_dir(split, "task_0004", "python3 /opt/evil/check.py /root/.openclaw/workspace\n")
    (_task_dir(split, "task_0005") / "input_files" / "link").symlink_to("/etc/passwd")
    (_task_dir(split, "task_0006") / "reward" / "check.py").unlink()
    judged = _task_dir(split, "task_0007") / "data_entry.json"
    judged.write_text(judged.read_text().replace('"automated"', '"llm_judge"'))
    load = load_tasks(split)
    assert [t.id for t in load.tasks] == ["task_0000"]
    errors = [str(e) for e in load.rejected]
    assert errors == [
        f"{split}/task_0001/data_entry.json: missing data_entry.json",
        f"{split}/task_0002/data_entry.json:4: not valid JSON: Expecting value",
        f"{split}/task_0003/reward/reward.sh:1: checker path '../../evil/check.py' is outside the task",
        f"{split}/task_0004/reward/reward.sh:1: checker path '/opt/evil/check.py' is outside the task",
        f"{split}/task_0005/input_files/link: symlinks are not allowed in task folders",
        f"{split}/task_0006/reward: checker entry 'reward/check.py' is not among the task's reward files",
        f"{split}/task_0007/data_entry.json: grading_type llm_judge needs rubric rules",
    ]
    assert load.rejected[1].line == 4


def _line(**rec: object) -> str:
    base: dict[str, object] = {
        "prompt": "p",
        "hook_code": "python3 reward/test.py /root/.openclaw/workspace",
        "input_files": [
            {"file_path": "reward/test.py", "file_format": "py", "content": "def grade(t, w): ..."}
        ],
    }
    base.update(rec)
    return json.dumps(base)


def test_jsonl_bad_lines_report_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "syn_task.jsonl"
    ok_files = [{"file_path": "reward/test.py", "content": "x"}, {"file_path": "d.txt", "content": "d"}]
    lines = [
        _line(input_files=ok_files),
        "{not json",
        _line(prompt=None),
        _line(input_files=[{"file_path": "../escape.txt", "content": "x"}]),
        _line(input_files=[{"file_path": "/etc/passwd", "content": "x"}]),
        _line(hook_code="python3 /opt/evil/test.py /root/.openclaw/workspace"),
        _line(hook_code="python3 reward/missing.py /root/.openclaw/workspace"),
        "[1, 2]",
        json.dumps({"prompt": "nothing grades this", "input_files": [{"file_path": "a", "content": "a"}]}),
        _line(
            input_files=[
                {"file_path": "reward/test.py", "content": "x"},
                {"file_path": "ok.txt", "content": "o"},
            ]
        ),
    ]
    path.write_text("\n".join(lines) + "\n")
    load = load_tasks(path)
    assert [t.id for t in load.tasks] == ["syn_task.jsonl:1", "syn_task.jsonl:10"]
    assert [str(e) for e in load.rejected] == [
        f"{path}:2: not valid JSON: Expecting property name enclosed in double quotes",
        f"{path}:3: `prompt` must be a string, not null",
        f"{path}:4: input_files[0]: path '../escape.txt' escapes the task directory",
        f"{path}:5: input_files[0]: absolute path '/etc/passwd' is not allowed",
        f"{path}:6: checker path '/opt/evil/test.py' is outside the task",
        f"{path}:7: checker 'reward/missing.py' (hook_code) is not among the reward/ files",
        f"{path}:8: line is not a JSON object",
        f"{path}:9: grading_type llm_judge needs rubric rules",
    ]
    assert [e.line for e in load.rejected] == [2, 3, 4, 5, 6, 7, 8, 9]


def test_jsonl_lines_past_the_json_limits_are_rejected_not_a_crash(tmp_path: Path) -> None:
    """A dataset line nested 5,000 deep or carrying a 5,000-digit integer crashed the loader with
    RecursionError / ValueError; the one untrusted-JSON decoder makes each a rejected task."""
    path = tmp_path / "deep.jsonl"
    deep = "[" * 5000 + "]" * 5000
    path.write_text("\n".join([_line(), deep, '{"prompt": ' + "9" * 5000 + "}", _line()]) + "\n")
    assert loaded(path, ["deep.jsonl:1", "deep.jsonl:4"]) == [
        f"{path}:2: JSON nests deeper than 256 levels",
        f"{path}:3: JSON holds an integer of 5000 digits (at most 4300)",
    ]


def test_a_data_entry_nested_too_deep_is_a_rejected_task(tmp_path: Path) -> None:
    split = tmp_path / "split"
    _task_dir(split, "task_0000")
    (_task_dir(split, "task_0001") / "data_entry.json").write_text('{"a": ' + "[" * 5000 + "]" * 5000 + "}")
    assert loaded(split, ["task_0000"]) == [
        f"{split}/task_0001/data_entry.json: JSON nests deeper than 256 levels"
    ]


MD_OK = (
    "---\nid: ok\ngrading_type: automated\n---\n\n## Prompt\n\nhi\n\n"
    "## Automated Checks\n\n```python\ndef grade(t, w):\n    return {'a': 1.0}\n```\n"
)


def test_pinchbench_bad_tasks(tmp_path: Path) -> None:
    (tmp_path / "a_ok.md").write_text(MD_OK)
    escape = MD_OK.replace("id: ok\n", "id: esc\nworkspace_files:\n  - path: ../../x.txt\n    content: x\n")
    (tmp_path / "b_escape.md").write_text(escape)
    (tmp_path / "c_noprompt.md").write_text(
        MD_OK.replace("id: ok", "id: np").replace("## Prompt", "## Intro")
    )
    (tmp_path / "d_yaml.md").write_text("---\nid: y\nname: [unclosed\n---\n## Prompt\nx\n")
    (tmp_path / "e_missing.md").write_text(
        MD_OK.replace("id: ok\n", "id: m\nworkspace_files:\n  - source: nope.csv\n    dest: nope.csv\n")
    )
    (tmp_path / "f_nochecks.md").write_text("---\nid: nc\ngrading_type: automated\n---\n## Prompt\nx\n")
    load = load_tasks(tmp_path)
    assert [t.id for t in load.tasks] == ["ok"]
    assert [str(e) for e in load.rejected] == [
        f"{tmp_path}/b_escape.md:4: workspace file: path '../../x.txt' escapes the task directory",
        f"{tmp_path}/c_noprompt.md:5: missing or empty `## Prompt` section",
        f"{tmp_path}/d_yaml.md:3: invalid YAML front matter: expected ',' or ']', but got '<stream end>'",
        f"{tmp_path}/e_missing.md:4: workspace source 'nope.csv' not found",
        f"{tmp_path}/f_nochecks.md:3: grading_type automated needs a code checker",
    ]
    assert [e.line for e in load.rejected] == [4, 5, 3, 4, 3]


def test_duplicate_ids_rejected(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text(MD_OK)
    (tmp_path / "b.md").write_text(MD_OK)
    load = load_tasks(tmp_path)
    assert [t.source for t in load.tasks] == [str(tmp_path / "a.md")]
    assert [str(e) for e in load.rejected] == [f"{tmp_path}/b.md: duplicate task id 'ok'"]


def test_missing_set_raises(tmp_path: Path) -> None:
    with pytest.raises(TaskError, match="task set not found"):
        load_tasks(tmp_path / "nope")


def test_taskfile_rejects_escaping_paths() -> None:
    for bad in ("../x", "/abs", "a/../../x", "C:/x"):
        with pytest.raises(ValueError):
            TaskFile(path=bad, content="x")


def test_materialize_revalidates_paths(tmp_path: Path) -> None:
    sneaky = Task.model_construct(
        id="t",
        prompt="p",
        workspace=[TaskFile.model_construct(path="../out.txt", content="x", source=None)],
        source="t",
    )
    with pytest.raises(TaskError, match="escapes the task directory"):
        materialize_workspace(sneaky, tmp_path / "ws")
    assert not (tmp_path / "out.txt").exists()
    ws = tmp_path / "ws2"
    ws.mkdir()
    (ws / "sub").symlink_to(tmp_path)
    task = Task(id="t", prompt="p", workspace=[TaskFile(path="sub/x.txt", content="x")])
    with pytest.raises(TaskError, match="passes through a symlink"):
        materialize_workspace(task, ws)
    assert not (tmp_path / "x.txt").exists()


def test_single_markdown_file_with_bad_value_is_rejected(tmp_path: Path) -> None:
    md = tmp_path / "t.md"
    md.write_text(MD_OK.replace("grading_type: automated", "grading_type: automated\ntimeout_seconds: soon"))
    load = load_tasks(md)
    assert load.tasks == []
    [err] = load.rejected
    assert str(err).startswith(f"{md}: invalid task: could not convert string to float: 'soon'")


def _harbor(root: Path, name: str, toml: str = "", instruction: str = "Do it.\n") -> Path:
    d = root / name
    (d / "tests").mkdir(parents=True)
    (d / "task.toml").write_text(toml)
    (d / "instruction.md").write_text(instruction)
    (d / "tests" / "test.sh").write_text("echo 1 > /logs/verifier/reward.txt\n")
    return d


def test_harbor_bad_tasks_name_file_line_and_field(tmp_path: Path) -> None:
    """Every field harnessrl cannot honour is an error naming the task's file, line and field;
    nothing runs in part. The rest of the dataset loads."""
    ds = tmp_path / "ds"
    _harbor(ds, "a-ok", '[agent]\ntimeout_sec = 10.0\n[verifier]\nnetwork_mode = "no-network"\n')
    (ds / "b-no-toml").mkdir()
    _harbor(ds, "c-bad-toml", "[agent]\ntimeout_sec = = 3\n")
    _harbor(ds, "d-unknown", "[environment]\ncpus = 1\ngpu_count = 2\n")
    _harbor(ds, "e-gpus", "[metadata]\nx = 1\n\n[environment]\ngpus = 1\n")
    _harbor(ds, "f-allowlist", '[agent]\nnetwork_mode = "allowlist"\nallowed_hosts = ["pypi.org"]\n')
    _harbor(ds, "g-host-var", '[verifier]\nenv = { OPENAI_API_KEY = "${OPENAI_API_KEY}" }\n')
    _harbor(ds, "h-steps", '[[steps]]\nname = "one"\n')
    _harbor(ds, "i-memory", '[environment]\nmemory = "2G"\nmemory_mb = 1024\n')
    _harbor(ds, "j-many", '[environment]\ngpus = 2\nos = "windows"\nmcp_servers = [{ name = "m" }]\n')
    compose = _harbor(ds, "k-compose") / "environment"
    compose.mkdir()
    (compose / "Dockerfile").write_text("FROM debian\n")
    (compose / "docker-compose.yaml").write_text("services:\n  main: {}\n  db: {}\n")
    _harbor(ds, "l-no-instruction", instruction="  \n")
    (_harbor(ds, "m-no-tests") / "tests" / "test.sh").unlink()
    (_harbor(ds, "n-link") / "tests" / "data").symlink_to("/etc/passwd")
    (_harbor(ds, "o-latin1") / "instruction.md").write_bytes(b"caf\xe9\n")
    _harbor(ds, "p-timeout", "[verifier]\ntimeout_sec = -1.0\n")
    _harbor(ds, "q-workdir", '[environment]\nworkdir = "app"\n')
    assert loaded(ds, ["a-ok"]) == [
        f"{ds}/b-no-toml/task.toml: missing task.toml",
        f"{ds}/c-bad-toml/task.toml:2: not valid TOML: Invalid value",
        f"{ds}/d-unknown/task.toml:3: `environment.gpu_count`: unknown field",
        f"{ds}/e-gpus/task.toml:5: `environment.gpus`: 1 GPU(s) asked for: sandboxes have none",
        f"{ds}/f-allowlist/task.toml:3: `agent.allowed_hosts`: an internet allow-list is not supported "
        "(sandboxes have no network)",
        f"{ds}/g-host-var/task.toml:2: `verifier.env.OPENAI_API_KEY`: '${{OPENAI_API_KEY}}' reads a host "
        "variable; harnessrl passes none into sandboxes",
        f"{ds}/h-steps/task.toml:1: `steps`: multi-step tasks are not supported",
        f"{ds}/i-memory/task.toml:2: `environment.memory`: memory = '2G' (2048 MB) conflicts with "
        "memory_mb = 1024",
        f"{ds}/j-many/task.toml:3: `environment.os`: 'windows': only Linux images are supported (and 2 "
        "more: environment.gpus, environment.mcp_servers)",
        f"{ds}/k-compose/environment/docker-compose.yaml: docker-compose environments are not supported "
        "(one image per task)",
        f"{ds}/l-no-instruction/instruction.md: instruction.md is empty",
        f"{ds}/m-no-tests/tests/test.sh: missing tests/test.sh (the verifier)",
        f"{ds}/n-link/tests/data: symlinks are not allowed in task folders",
        f"{ds}/o-latin1/instruction.md: not UTF-8 text",
        f"{ds}/p-timeout/task.toml:2: `verifier.timeout_sec`: -1.0 is not a positive number of seconds",
        f"{ds}/q-workdir/task.toml:2: `environment.workdir`: 'app' is not an absolute path",
    ]


def test_training_refuses_tasks_whose_agent_asks_for_the_internet(tmp_path: Path) -> None:
    from harnessrl.config import Config
    from harnessrl.tasks.harbor import refuse_internet
    from harnessrl.train.loop import TrainLoop

    _harbor(tmp_path / "ds", "offline", "[environment]\nallow_internet = false\n")
    _harbor(tmp_path / "ds", "online", "[environment]\nallow_internet = true\n")
    _harbor(tmp_path / "ds", "public", '[agent]\nnetwork_mode = "public"\n')
    _harbor(
        tmp_path / "ds",
        "quiet",
        '[environment]\nnetwork_mode = "public"\n[agent]\nnetwork_mode = "no-network"\n',
    )
    tasks = load_tasks(tmp_path / "ds").tasks
    assert [(t.id, t.environment.internet if t.environment else None) for t in tasks] == [
        ("offline", False),
        ("online", True),
        ("public", True),
        ("quiet", False),
    ]
    with pytest.raises(TaskError) as refused:
        TrainLoop(Config(), tasks, trainer=None, engine=None)  # type: ignore[arg-type]
    assert str(refused.value) == (
        '2 task(s) say their agent needs the internet (allow_internet / network_mode = "public"), which '
        "harnessrl sandboxes never give it: online, public. Training refuses them by default; leave them "
        "out, or set train.allow_internet_tasks=true (-o train.allow_internet_tasks=true) to train on them "
        "offline"
    )
    refuse_internet(tasks, allow=True)
