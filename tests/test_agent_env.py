"""The sandbox agent environment (`scripts/agent_env`, `sandbox.agent_env`): bound read-only into a
real sandbox, first on PATH (`python`, pytest, numpy, pandas), and the checker's python too."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harnessrl.sandbox import Sandbox, SandboxSpec
from harnessrl.sandbox.agent_env import resolve_agent_env
from harnessrl.types import Checker, Task, TaskFile
from harnessrl.verify import run_checker
from harnessrl.verify.sandboxed import SandboxCommandRunner

ENV = resolve_agent_env("auto")
pytestmark = [
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed"),
    pytest.mark.skipif(ENV is None, reason="no agent environment: run scripts/agent_env"),
]

TEST_FILE = "import numpy as np\n\ndef test_sum():\n    assert int(np.arange(4).sum()) == 6\n"
CHECK = """
import json, subprocess, sys
ws = sys.argv[1]
run = subprocess.run(["python", "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=ws,
                     capture_output=True, text=True)
print(json.dumps({"tests_pass": float(run.returncode == 0)}))
"""


async def test_inside_a_sandbox_python_has_the_packages_and_the_tree_is_read_only(sb_base: Path) -> None:
    assert ENV is not None
    spec = SandboxSpec(ro_binds=(ENV,), path_prefix=(str(ENV / "bin"),), base_dir=sb_base)
    async with await Sandbox.create(spec) as sb:
        (sb.host_workspace / "test_sum.py").write_text(TEST_FILE)
        sb.hand_over(sb.host_workspace)
        probe = "import numpy, pandas, pytest, openpyxl, yaml, requests, sys; print(sys.prefix)"
        res = await sb.exec(["sh", "-c", f"command -v python; python -c '{probe}'"], timeout_s=60)
        assert res.returncode == 0, res.stderr
        assert res.stdout.split() == [str(ENV / "bin" / "python"), str(ENV)]
        res = await sb.exec(["python", "-m", "pytest", "-q", "-p", "no:cacheprovider"], timeout_s=60)
        assert res.returncode == 0 and "1 passed" in res.stdout, res.stdout + res.stderr
        res = await sb.exec(["sh", "-c", f"touch {ENV}/x || echo refused"], timeout_s=10)
        assert "refused" in res.stdout and "Read-only file system" in res.stderr


@pytest.mark.parametrize(("solved", "score"), [(True, 1.0), (False, 0.0)])
def test_a_checker_running_pytest_scores_the_reference(tmp_path: Path, solved: bool, score: float) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "test_sum.py").write_text(TEST_FILE if solved else TEST_FILE.replace("== 6", "== 7"))
    task = Task(id="t", prompt="p", checker=Checker(files=[TaskFile(path="reward/check.py", content=CHECK)]))
    result = run_checker(task, ws, runner=SandboxCommandRunner(agent_env=ENV))
    assert (result.error, result.metrics) == (None, {"tests_pass": score}), result.stderr_tail


def test_off_and_missing_paths(tmp_path: Path) -> None:
    assert resolve_agent_env("off") is None
    with pytest.raises(FileNotFoundError, match=r"no .*/bin/python"):
        resolve_agent_env(str(tmp_path))
    assert resolve_agent_env(str(ENV)) == ENV
