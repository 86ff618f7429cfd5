"""Issue 31.2: only ClawGym's one canonical `reward.sh` is run as its `.py` checker; any script that
runs anything else is a shell entry (the script itself is the task's checker) and training refuses it.

On 2fb1988 every variant below was taken as the canonical wrapper: the loader ran `check.py` directly
and scored 1.0 where the script prints 0.0, and the training refusal of shell entries never applied.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harnessrl.tasks import load_tasks
from harnessrl.tasks.reward_sh import CANONICAL_REWARD_SH, WRAPPER_CODE, is_canonical_wrapper
from harnessrl.types import Task, TaskError
from harnessrl.verify import run_checker
from harnessrl.verify.checker import refuse_shell_entries
from harnessrl.verify.sandboxed import SandboxCommandRunner

FIXTURES = Path(__file__).parent / "fixtures"
MOUNT = "/root/.openclaw/workspace"
PIPELINE = f"python3 {MOUNT}/reward/check.py {MOUNT} | python3 -c '{WRAPPER_CODE}'"
HEAD = "#!/usr/bin/env bash\nset -euo pipefail\n\n"
CHECK = """
import json, sys
from pathlib import Path
ws = Path(sys.argv[1])
print(json.dumps({"right": float((ws / "out.txt").exists() and (ws / "out.txt").read_text() == "hi")}))
"""

HOSTILE = {
    "set_line_runs_commands": "#!/usr/bin/env bash\nset -euo pipefail; echo 0.0; exit 0\n" + PIPELINE + "\n",
    "workspace_argument_runs_commands": HEAD
    + PIPELINE.replace(f"{MOUNT} |", f"{MOUNT};echo${{IFS}}0.0;exit |")
    + "\n",
    "set_and_chain": HEAD + "set -e && echo 0.0 && exit 0\n" + PIPELINE + "\n",
    "set_then_continuation": HEAD + "set -e \\\n; echo 0.0; exit 0\n" + PIPELINE + "\n",
    "backquotes_in_workspace": HEAD + PIPELINE.replace(f"{MOUNT} |", f"{MOUNT}`echo 0.0;exit` |") + "\n",
    "command_substitution_in_mount": HEAD
    + PIPELINE.replace(f"{MOUNT} |", f"{MOUNT}$(echo${{IFS}}0.0;exit) |")
    + "\n",
    "glob_in_workspace": HEAD + PIPELINE.replace(f"{MOUNT} |", f"{MOUNT}* |") + "\n",
    "command_after_pipeline": HEAD + PIPELINE + "; echo 0.0\n",
    "background_pipeline": HEAD + PIPELINE + " &\necho 0.0\n",
    "set_positional_args": HEAD + "set -e -- 0.0\n" + PIPELINE + "\n",
    "set_xtrace": "set -x\n" + PIPELINE + "\n",
    "carriage_returns": CANONICAL_REWARD_SH.replace("\n", "\r\n"),
    "carriage_return_in_comment": "# scored by the mean\recho 0.0; exit 0\n" + PIPELINE + "\n",
    "workspace_other_than_mount": HEAD + PIPELINE.replace(f"{MOUNT} |", f"{MOUNT}/input |") + "\n",
    "other_interpreter_shebang": "#!/usr/bin/env -S bash -c 'echo 0.0'\n" + PIPELINE + "\n",
    "non_ascii_space": HEAD + PIPELINE.replace(" | ", "\u00a0| ") + "\n",
    "wrapper_code_changed": HEAD + PIPELINE.replace("/ len(data)", "/ 2") + "\n",
}
"""Each a `reward.sh` that runs something the canonical wrapper does not."""

EQUIVALENT = {
    "plain": PIPELINE + "\n",
    "shebang_bin_bash": "#!/bin/bash\n" + PIPELINE,
    "set_spelled_out": "#!/usr/bin/bash\nset -e -u\nset -o pipefail\nset -o errexit\n" + PIPELINE + "\n",
    "comments_and_tabs": "# scored by the mean\n\n\t# of the checker's metrics\n"
    + PIPELINE.replace(" | ", "\t|\t")
    + "\n",
    "continued": HEAD + PIPELINE.replace(" | ", " \\\n  | ") + "\n",
    "other_checker": PIPELINE.replace("check.py", "test_1.py"),
}
"""Whitespace, comments, shebangs and whole `set -e/-u/-o pipefail` lines: still canonical."""


def _split(root: Path, scripts: dict[str, str]) -> Path:
    split = root / "split"
    for name, script in scripts.items():
        d = split / name
        (d / "input_files").mkdir(parents=True)
        (d / "reward").mkdir()
        entry = {"task_id": name, "user_query": "write hi to out.txt", "metadata": {}}
        (d / "data_entry.json").write_text(json.dumps(entry))
        (d / "input_files" / "README.md").write_text("task\n")
        (d / "reward" / "check.py").write_text(CHECK)
        (d / "reward" / "test_1.py").write_text(CHECK)
        (d / "reward" / "reward.sh").write_bytes(script.encode())
    return split


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_reward_sh_that_runs_other_code_is_a_shell_entry(tmp_path: Path, name: str) -> None:
    assert not is_canonical_wrapper(HOSTILE[name])
    load = load_tasks(_split(tmp_path, {name: HOSTILE[name]}))
    assert load.rejected == []
    [task] = load.tasks
    assert task.checker is not None
    assert (task.checker.shell_entry, task.checker.command) == ("reward/reward.sh", HOSTILE[name])
    with pytest.raises(TaskError, match=rf"^1 task\(s\) are scored by their own reward.sh.*: {name}\. "):
        refuse_shell_entries([task], allow=False)


@pytest.mark.parametrize("name", sorted(EQUIVALENT))
def test_whitespace_comments_and_set_lines_stay_canonical(tmp_path: Path, name: str) -> None:
    assert is_canonical_wrapper(EQUIVALENT[name])
    [task] = load_tasks(_split(tmp_path, {name: EQUIVALENT[name]})).tasks
    assert task.checker is not None
    entry = "reward/test_1.py" if name == "other_checker" else "reward/check.py"
    assert (task.checker.entry, task.checker.shell_entry) == (entry, None)
    refuse_shell_entries([task], allow=False)


def test_the_real_clawgym_reward_sh_files_stay_canonical() -> None:
    scripts = sorted(FIXTURES.glob("clawgym-*/**/reward/reward.sh"))
    assert len(scripts) == 4
    assert {s.read_bytes().decode() for s in scripts} == {CANONICAL_REWARD_SH}
    assert is_canonical_wrapper(CANONICAL_REWARD_SH.replace(MOUNT, "/data/ws"))  # any safe mount path
    for folder in ("clawgym-format", "clawgym-realtasks"):
        tasks = load_tasks(FIXTURES / folder).tasks
        assert tasks and {(t.checker.entry, t.checker.shell_entry) for t in tasks if t.checker} == {
            ("reward/check.py", None)
        }


def _scored(task: Task, tmp_path: Path) -> tuple[float, str, str | None]:
    ws = tmp_path / f"ws-{task.id}"
    ws.mkdir()
    (ws / "out.txt").write_text("hi")  # check.py alone says 1.0
    result = run_checker(task, ws, runner=SandboxCommandRunner())
    return result.score, result.mode, result.error


@pytest.mark.security
@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")
def test_the_script_not_its_checker_gives_the_score(tmp_path: Path) -> None:
    """What the script prints is the reward: 0.0 for the two variants of the issue (2fb1988: 1.0)."""
    names = ["set_line_runs_commands", "workspace_argument_runs_commands"]
    tasks = load_tasks(_split(tmp_path, {n: HOSTILE[n] for n in names})).tasks
    assert [_scored(t, tmp_path) for t in tasks] == [
        (0.0, "shell", None),  # prints 0.0 and exits 0
        (0.0, "shell", "checker exited with status 1"),  # prints 0.0, then `exit | python3 -c` fails
    ]
    [control] = load_tasks(_split(tmp_path / "c", {"canonical": CANONICAL_REWARD_SH})).tasks
    assert _scored(control, tmp_path) == (1.0, "script", None)  # check.py run directly
