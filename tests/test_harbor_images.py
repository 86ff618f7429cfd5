"""Harbor tasks on their own images, end to end (issue 32): the four tasks of
tests/fixtures/harbor-images, each built FROM the base image made from Debian packages (once per
session, cached under <cache>/images between runs). `tasks check` proves each oracle (1.0) and each
untouched image (0.0); real Claude Code and Codex replay each solve.sh through their shell tool in a
sandbox on the image (1.0); an agent on the image finds neither tests/ nor solution/, and one that
rewrites /logs/verifier, replaces python in its own root and plants conftest.py / pytest.ini scores 0."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from harness_solve import harness_test, scripted_config, train_two_steps
from typer.testing import CliRunner

from harnessrl.cli import app
from harnessrl.rollout import RolloutJob
from harnessrl.rollout.environment import task_system
from harnessrl.rollout.session import RolloutStack
from harnessrl.sandbox import Sandbox
from harnessrl.sandbox.agent_env import resolve_agent_env
from harnessrl.types import RolloutStatus, Task
from harnessrl.verify import run_checker
from harnessrl.verify.harbor_roots import Admission, ImageVerifierRoot
from harnessrl.verify.sandboxed import SandboxCommandRunner

HARBOR_IMAGES = Path(__file__).parent / "fixtures" / "harbor-images"
IDS = ["apt-hello", "copied-data", "multi-metric", "pypi-humanize"]
METRICS = {
    "apt-hello": {"reward": 1.0},
    "copied-data": {"reward": 1.0},
    "multi-metric": {"exists": 1.0, "count": 1.0, "sorted": 1.0},
    "pypi-humanize": {"reward": 1.0},
}
FORGED = "#!/bin/sh\\necho 1 > /logs/verifier/reward.txt\\n"  # what the replaced python3 does
PASS_ALL = (
    "import pytest\\n\\n@pytest.hookimpl(hookwrapper=True)\\ndef pytest_runtest_makereport():\\n    yield\\n"
)
TAMPER = (
    "mkdir -p /logs/verifier && echo 1 > /logs/verifier/reward.txt && "
    "echo '{\"reward\": 1}' > /logs/verifier/reward.json; "
    f'printf "{FORGED}" > /tmp/forged && chmod 755 /tmp/forged && '
    "cp /tmp/forged /usr/local/bin/python3 && cp /tmp/forged /usr/bin/python3; "  # the link's target
    "[ -d /opt/venv ] && rm /opt/venv/bin/python3 && cp /tmp/forged /opt/venv/bin/python3; "  # first on PATH
    "mkdir -p /node_modules/semver /.git && echo 'module.exports = 1' > /node_modules/semver/index.js && "
    "echo '[core]' > /.git/config; "  # found by walking up from /tests
    f'printf "{PASS_ALL}" > /app/conftest.py; cp /app/conftest.py /conftest.py; '
    "printf '[pytest]\\n' > /pytest.ini; echo done"
)
PROBE = (  # the markers are put together at run time: this command line must not match itself
    "T=HARNESSRL-TESTS; S=HARNESSRL-SOLUTION; { ls -d /tests /solution 2>/dev/null; "
    "find / -xdev \\( -name test.sh -o -name solve.sh -o -name task.toml \\) -print 2>/dev/null; "
    'find / -xdev -type f -print0 2>/dev/null | xargs -0 grep -lsF -e "$T-SECRET" -e "$S-SECRET"; '
    "} > /app/probe.txt; "
)
pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")


def test_tasks_check_proves_each_oracle_and_each_untouched_image(harbor_image_tasks: list[Task]) -> None:
    result = CliRunner().invoke(
        app, ["tasks", "check", str(HARBOR_IMAGES), "-j", "2"], env={"COLUMNS": "200"}
    )
    assert result.exit_code == 0, result.output
    rows = {m[1]: (m[2], m[3]) for m in re.finditer(r"│ (\S+)\s+│ (\S+)\s+│ (\S+)\s+│", result.output)}
    assert rows == {task_id: ("0.000", "1.000") for task_id in IDS}
    assert "4 ok, 0 failed (sandboxed)" in result.output


@harness_test
@pytest.mark.parametrize("harness", ["claude-code", "codex"])
async def test_a_real_harness_solves_each_task_on_its_image(
    harbor_image_tasks: list[Task], tmp_path: Path, harness: str
) -> None:
    """The scripted engine replays each solve.sh through the harness's own shell tool, in a sandbox
    whose root is the task's image (Codex, a `#!/usr/bin/env node` script, on our pinned Node); the
    tests score the agent's writable layer on a fresh sandbox of the same image."""
    cfg = scripted_config(harness, tmp_path)
    cfg.rollout.concurrency = 4
    async with RolloutStack.from_config(cfg, harbor_image_tasks) as stack:
        assert stack.runner is not None
        rollouts = await stack.runner.run_many([RolloutJob(t, harness, t.id) for t in harbor_image_tasks])
    for rollout in rollouts:
        assert (rollout.status, rollout.reward) == (RolloutStatus.OK, 1.0), (
            rollout.task_id,
            rollout.status_reason,
        )
        code = rollout.reward_detail["code"]
        assert (code["mode"], code["metrics"], code["error"]) == ("harbor", METRICS[rollout.task_id], None)
        assert (Path(rollout.workdir) / "layer" / "app").is_dir()


async def _shell_rollouts(tasks: list[Task], out: Path, command: str) -> list[Any]:
    cfg = scripted_config("shell", out)
    cfg.rollout.concurrency = 4
    async with RolloutStack.from_config(cfg, tasks) as stack:
        assert stack.runner is not None
        jobs = [RolloutJob(t, "shell", t.id, options={"command": command}) for t in tasks]
        return await stack.runner.run_many(jobs)


@pytest.mark.security
async def test_an_agent_on_the_image_finds_no_tests_and_its_tampering_scores_0(
    harbor_image_tasks: list[Task], tmp_path: Path
) -> None:
    """From inside the agent's sandbox on each image: no /tests, /solution, test.sh, solve.sh or
    task.toml anywhere, and no file holding the tests' or the solution's marker. Then the agent
    writes rewards of 1 into its /logs/verifier, replaces python3 (and shadows it in
    /usr/local/bin, and in multi-metric's venv, first on its PATH) with a script that writes rewards
    of 1, and plants conftest.py, pytest.ini, /node_modules and /.git in /app and /: every task scores
    0, the system and runtime files are left out of the verifier's copy."""
    rollouts = await _shell_rollouts(harbor_image_tasks, tmp_path, PROBE + TAMPER)
    for rollout in rollouts:
        layer = Path(rollout.workdir) / "layer"
        assert (layer / "app" / "probe.txt").read_text() == "", rollout.task_id
        assert (rollout.status, rollout.reward) == (RolloutStatus.OK, 0.0), rollout.status_reason
        code = rollout.reward_detail["code"]
        assert code["error"] is None and set(code["metrics"].values()) == {0.0}
        dropped = {"/usr/local/bin/python3", "/usr/bin/python3.11", "/conftest.py", "/pytest.ini"}
        dropped |= {"/node_modules/semver/index.js", "/.git/config"}
        if rollout.task_id == "multi-metric":
            dropped.add("/opt/venv/bin/python3")
        assert dropped <= set(code["dropped"]), code["dropped"]
        assert (layer / "app" / "conftest.py").is_file()  # kept: the tests do not collect /app


class WholeLayer(ImageVerifierRoot):
    """The image root without the layer rule: what the verifier would run on if it took the agent's
    layer whole."""

    def admit(self, changes: Path) -> Admission:
        return Admission()


@pytest.mark.security
@pytest.mark.parametrize(
    ("task_id", "honest"),
    [("apt-hello", {"reward": 0.0}), ("multi-metric", {"exists": 0.0, "count": 0.0, "sorted": 0.0})],
)
async def test_without_the_layer_rule_the_replaced_python_would_forge_the_reward(
    harbor_image_tasks: list[Task], tmp_path: Path, task_id: str, honest: dict[str, float]
) -> None:
    task = next(t for t in harbor_image_tasks if t.id == task_id)
    system = task_system(task)
    spec = system.agent_spec(
        task, None, scripted_config("shell", tmp_path).sandbox, ("127.0.0.1", 9), (), None
    )
    async with await Sandbox.create(spec) as sb:
        res = await sb.exec(["bash", "-c", TAMPER])
        assert res.stdout == "done\n", res.stderr
        report = await sb.destroy(keep_layer=tmp_path / "layer")
    assert report is not None and report.truncated == ""
    shutil.copytree(tmp_path / "layer", tmp_path / "whole", symlinks=True)
    runner = SandboxCommandRunner()
    assert system.image is not None
    whole = run_checker(
        task, tmp_path / "whole", runner=runner, root=WholeLayer(system.image, system.workdir)
    )
    assert (whole.score, whole.metrics) == (1.0, {"reward": 1.0})  # the attack is real
    ruled = run_checker(task, tmp_path / "layer", runner=runner, root=ImageVerifierRoot(system.image, "/app"))
    assert (ruled.score, ruled.metrics, ruled.error) == (0.0, honest, None)
    venv = ["/opt/venv/bin/python3"] if task_id == "multi-metric" else []  # its python, first on PATH
    assert ruled.dropped == [
        "/.git/config",
        "/conftest.py",
        "/logs/verifier/reward.json",
        "/logs/verifier/reward.txt",
        "/node_modules/semver/index.js",
        *venv,
        "/pytest.ini",
        "/usr/bin/python3.11",
        "/usr/local/bin/python3",
    ]


@pytest.mark.security
async def test_a_folder_the_agent_closed_does_not_stop_its_tests_nor_count_as_infrastructure(
    harbor_image_tasks: list[Task], tmp_path: Path
) -> None:
    """`chmod 000 /app /opt` as the agent's last command once stopped the verifier's sandbox from
    starting (bwrap, as its uid, could neither enter the working folder nor run /opt/harnessrl/agent):
    a VerifierError, infrastructure, so a policy could turn any 0 it expected into a dropped rollout.
    The layer copy gives every folder's owner rwx, so the tests run on it (the right answer scores 1,
    a wrong one 0); a layer that stops the sandbox all the same (made by hand here, as no copy leaves
    one) is the policy's: score 0 with the reason, not a VerifierError."""
    task = next(t for t in harbor_image_tasks if t.id == "copied-data")
    closing = "; chmod 000 /opt /app"
    for total, reward in (("12", 1.0), ("13", 0.0)):
        (rollout,) = await _shell_rollouts(
            [task], tmp_path / total, f"echo {total} > /app/total.txt{closing}"
        )
        assert (rollout.status, rollout.reward) == (RolloutStatus.OK, reward), rollout.status_reason
        assert rollout.reward_detail["code"]["error"] is None
    system = task_system(task)
    assert system.image is not None
    layer = tmp_path / "layer"
    (layer / "app").mkdir(parents=True)
    (layer / "app" / "total.txt").write_text("12\n")
    (layer / "app").chmod(0)
    root = ImageVerifierRoot(system.image, "/app")
    result = run_checker(task, layer, runner=SandboxCommandRunner(), root=root)
    assert (result.score, result.metrics) == (0.0, {})
    said = "the verifier's sandbox could not start on the agent's changes: sandbox "
    assert result.error is not None and result.error.startswith(said), result.error


async def test_the_tasks_env_and_limits_reach_its_sandbox_and_not_the_agent_environment(
    harbor_image_tasks: list[Task], tmp_path: Path
) -> None:
    """apt-hello asks for 2 GiB of memory and 1 GiB of storage, copied-data sets DATA_FILE; on an
    image PATH is the image's (no agent environment: no pytest). A Harbor task on the host root gets
    its env and limits too, and the agent environment (pytest) first on PATH."""
    from harnessrl.tasks import load_tasks

    host = tmp_path / "ds" / "host-root"
    (host / "tests").mkdir(parents=True)
    (host / "instruction.md").write_text("Do it.\n")
    (host / "tests" / "test.sh").write_text("echo 1 > /logs/verifier/reward.txt\n")
    (host / "task.toml").write_text(
        '[environment]\nmemory_mb = 1536\nstorage_mb = 512\nenv = { DATA_FILE = "host" }\n'
    )
    size = '$(df -m /tmp | tail -1 | tr -s " " | cut -d" " -f2)'
    probe = (
        f'printf "%s|%s|%s|%s|%s\\n" "$DATA_FILE" "$(ulimit -d)" "{size}" '
        '"$(basename "$(command -v pytest || echo no-pytest)")" "$PATH" > /app/env.txt'
    )
    tasks = [t for t in harbor_image_tasks if t.id in ("apt-hello", "copied-data")]
    rollouts = await _shell_rollouts([*tasks, *load_tasks(host).tasks], tmp_path / "runs", probe)
    seen = {r.task_id: (Path(r.workdir) / "workspace" / "env.txt").read_text().strip() for r in rollouts}
    path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    host_line = seen.pop("host-root").split("|")
    assert seen == {
        "apt-hello": f"|{2048 * 1024}|1024|no-pytest|{path}",
        "copied-data": f"/app/data.csv|{4096 * 1024}|2048|no-pytest|{path}",
    }
    tools = "pytest" if resolve_agent_env("auto") is not None else "no-pytest"
    assert host_line[:4] == ["host", str(1536 * 1024), "512", tools]


async def test_a_tasks_cpus_become_a_cgroup_quota(sb_base: Path) -> None:
    """`cpus = 0.5`: a quota of 50 ms per 100 ms for the sandbox as a whole; a busy loop of 2 s of
    wall time gets at most ~1 s of CPU (it may get less on a loaded machine, never more)."""
    from harnessrl.sandbox import SandboxSpec
    from harnessrl.sandbox.cgroups import cpu_parent

    if cpu_parent() is None:
        pytest.skip("this machine gives harnessrl no cgroup cpu controller")
    busy = (
        "import time, os\nend = time.time() + 2\nwhile time.time() < end: pass\n"
        "t = os.times()\nprint(t.user + t.system)"
    )
    async with await Sandbox.create(SandboxSpec(cpus=0.5, base_dir=sb_base)) as sb:
        assert sb.cgroup is not None and sb.cgroup.cpu is not None
        names = ("cpu.max",) if sb.cgroup.kind == "v2" else ("cpu.cfs_quota_us", "cpu.cfs_period_us")
        limits = [(sb.cgroup.cpu / name).read_text().strip() for name in names]
        res = await sb.exec(["python3", "-c", busy], timeout_s=30)
    assert limits == (["50000 100000"] if len(names) == 1 else ["50000", "100000"])
    assert float(res.stdout) < 1.3, res.stdout


@pytest.mark.slow
@harness_test
def test_train_runs_two_grpo_steps_on_the_image_tasks(harbor_image_tasks: list[Task], tmp_path: Path) -> None:
    """`harnessrl train -c configs/harbor.toml`: SmolLM2-135M through Claude Code --bare on the four
    image tasks, two GRPO steps of 2 tasks x 2 rollouts (minutes on 2 cores). A 135M model solves
    none, so every group has zero variance and nothing is trained; the steps and rollouts run."""
    records = train_two_steps(tmp_path / "harbor", "-c", "configs/harbor.toml")
    assert all(r["groups"]["scheduled"] == 2 for r in records)


def test_a_task_whose_image_cannot_be_had_stops_the_run_before_any_rollout(tmp_path: Path) -> None:
    """One line naming the task, the image and how to provide it; no engine is built, nothing runs."""
    from harnessrl.images import missing_tools
    from harnessrl.tasks import load_tasks
    from harnessrl.types import ImageError

    if missing_tools(["podman"]):
        pytest.skip("needs podman: scripts/setup installs it as root")
    task = tmp_path / "ds" / "unreachable"
    (task / "tests").mkdir(parents=True)
    (task / "instruction.md").write_text("Do it.\n")
    (task / "tests" / "test.sh").write_text("echo 1 > /logs/verifier/reward.txt\n")
    (task / "task.toml").write_text('[environment]\ndocker_image = "registry.invalid/harnessrl/none:1"\n')
    cfg = scripted_config("shell", tmp_path / "runs")
    with pytest.raises(ImageError) as caught:
        RolloutStack.from_config(cfg, load_tasks(tmp_path / "ds").tasks)
    message = str(caught.value)
    assert "\n" not in message and not (tmp_path / "runs").exists()
    assert message.startswith(f"task {task}: image 'registry.invalid/harnessrl/none:1' is not in the local")
    assert f"`harnessrl env build {task}`" in message
