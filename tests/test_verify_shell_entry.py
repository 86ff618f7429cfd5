"""A task's own `reward.sh` (`Checker.shell_entry`) runs with bash in the checker sandbox, in the
upstream layout (reward folder copied into the workspace at the task's mount dir); metric values are
taken with `float(v)`, as the canonical wrapper does (numeric strings and booleans count)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harnessrl.tasks import load_tasks
from harnessrl.types import Checker, Task, TaskFile
from harnessrl.verify import run_checker
from harnessrl.verify.sandboxed import SandboxCommandRunner

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")

CHECK = """
import json, sys
from pathlib import Path
ws = Path(sys.argv[1])
print(json.dumps({"exists": "1.0" if (ws / "out.txt").exists() else "0", "right": float(
    (ws / "out.txt").exists() and (ws / "out.txt").read_text() == "hi")}))
"""
# Not the canonical wrapper: the minimum instead of the mean, and a line of noise before it.
MIN_SH = """#!/usr/bin/env bash
set -euo pipefail
echo "scoring"
python3 /root/.openclaw/workspace/reward/check.py /root/.openclaw/workspace \\
  | python3 -c 'import json, sys; d = json.load(sys.stdin); print(min(float(v) for v in d.values()))'
"""


def make_split(root: Path, reward_sh: str) -> Task:
    d = root / "split" / "task_a"
    (d / "input_files").mkdir(parents=True)
    (d / "reward").mkdir()
    entry = {"task_id": "task_a", "user_query": "write hi to out.txt", "metadata": {}}
    (d / "data_entry.json").write_text(json.dumps(entry))
    (d / "input_files" / "README.md").write_text("task\n")
    (d / "reward" / "check.py").write_text(CHECK)
    (d / "reward" / "reward.sh").write_text(reward_sh)
    load = load_tasks(root / "split")
    assert load.rejected == []
    return load.tasks[0]


def workspace(tmp_path: Path, content: str | None) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    if content is not None:
        (ws / "out.txt").write_text(content)
    return ws


@pytest.mark.parametrize(("content", "score"), [("hi", 1.0), ("ho", 0.0)])
def test_custom_reward_sh_is_the_entry(tmp_path: Path, content: str, score: float) -> None:
    task = make_split(tmp_path, MIN_SH)
    assert task.checker is not None and task.checker.shell_entry == "reward/reward.sh"
    ws = workspace(tmp_path, content)
    (ws / "reward").symlink_to("/etc")  # planted by the agent: replaced, never followed
    result = run_checker(task, ws, runner=SandboxCommandRunner())
    got = (result.error, result.mode, result.metrics, result.score)
    assert got == (None, "shell", {"score": score}, score)
    assert sorted(p.name for p in ws.iterdir()) == ["out.txt"]  # the reward files are gone again


def test_a_failing_reward_sh_scores_zero(tmp_path: Path) -> None:
    task = make_split(tmp_path, "#!/usr/bin/env bash\nset -euo pipefail\necho 1\nfalse\n")
    result = run_checker(task, workspace(tmp_path, "hi"), runner=SandboxCommandRunner())
    assert (result.score, result.mode, result.error) == (0.0, "shell", "checker exited with status 1")


def test_numeric_strings_count_as_their_float_value(tmp_path: Path) -> None:
    code = "def grade(t, w):\n    return {'a': '1.0', 'b': ' 0 ', 'c': True, 'd': '1e0'}\n"
    task = Task(id="t", prompt="p", checker=Checker(files=[TaskFile(path="reward/check.py", content=code)]))
    result = run_checker(task, workspace(tmp_path, None), runner=SandboxCommandRunner())
    assert (result.error, result.metrics, result.score) == (
        None,
        {"a": 1.0, "b": 0.0, "c": 1.0, "d": 1.0},
        0.75,
    )


def test_training_refuses_shell_entry_tasks_unless_allowed(tmp_path: Path) -> None:
    """Programs a task's own reward.sh runs from the workspace share its stdout while it runs, so
    training refuses such tasks by default, naming them and the switch (evaluation runs them)."""
    from harnessrl.config import Config
    from harnessrl.train.loop import TrainLoop
    from harnessrl.types import TaskError
    from harnessrl.verify.checker import refuse_shell_entries

    task = make_split(tmp_path, MIN_SH)
    plain = Task(
        id="plain", prompt="p", checker=Checker(files=[TaskFile(path="reward/check.py", content=CHECK)])
    )
    with pytest.raises(TaskError) as refused:
        TrainLoop(Config(), [plain, task], trainer=None, engine=None)  # type: ignore[arg-type]
    assert str(refused.value) == (
        "1 task(s) are scored by their own reward.sh, whose answer code from the workspace can forge while "
        "it runs: task_a. Training refuses them by default; leave them out, or set "
        "verify.allow_shell_entries=true (-o verify.allow_shell_entries=true) to train on them"
    )
    refuse_shell_entries([plain, task], allow=True)
    refuse_shell_entries([plain], allow=False)
