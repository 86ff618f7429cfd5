"""The Harbor verifier (`verify/harbor.py`): a task's tests/test.sh in a fresh sandbox after the agent,
its reward read from /logs/verifier through the sealed channel, every malformed reward the policy's
failure (score 0 with the reason), a verifier that cannot be had the infrastructure's."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from harness_solve import scripted_config
from typer.testing import CliRunner

from harnessrl.cli import app
from harnessrl.config import Config
from harnessrl.rollout import RolloutJob
from harnessrl.rollout.session import RolloutStack
from harnessrl.sandbox.agent_env import resolve_agent_env
from harnessrl.tasks import load_tasks
from harnessrl.types import RolloutStatus, Task, TaskError, VerifierError
from harnessrl.verify import run_checker
from harnessrl.verify.harbor import preflight
from harnessrl.verify.sandboxed import SandboxCommandRunner

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")
HARBOR = Path(__file__).parent / "fixtures" / "harbor-dataset"
RUNNER = SandboxCommandRunner(agent_env=resolve_agent_env("auto"))


def harbor_task(
    root: Path, test_sh: str, toml: str = "[verifier]\ntimeout_sec = 20.0\n", name: str = "t"
) -> Task:
    d = root / "ds" / name
    (d / "tests").mkdir(parents=True)
    (d / "task.toml").write_text(toml)
    (d / "instruction.md").write_text("Do it.\n")
    (d / "tests" / "test.sh").write_text(test_sh)
    [task] = [t for t in load_tasks(root / "ds").tasks if t.id == name]
    return task


def workspace(tmp_path: Path, **files: str) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    for name, text in files.items():
        (ws / name).write_text(text)
    return ws


def fixture_task(task_id: str) -> Task:
    return next(t for t in load_tasks(HARBOR).tasks if t.id == task_id)


def test_a_host_root_task_scores_its_reward_txt(tmp_path: Path) -> None:
    task = fixture_task("hello-world")
    untouched = run_checker(task, workspace(tmp_path), runner=RUNNER)
    assert (untouched.score, untouched.metrics, untouched.error, untouched.mode) == (
        0.0,
        {"reward": 0.0},
        None,
        "harbor",
    )
    solved = run_checker(task, workspace(tmp_path, **{"hello.txt": "Hello, world!\n"}), runner=RUNNER)
    assert (solved.score, solved.metrics, solved.error) == (1.0, {"reward": 1.0}, None)


def test_a_multi_metric_reward_json_keeps_every_metric(tmp_path: Path) -> None:
    """pytest in the sandbox, the task's [verifier] env, two metrics: the score is their mean."""
    task = fixture_task("multi-metric")
    half = run_checker(task, workspace(tmp_path, **{"summary.csv": "name,total\npears,3\n"}), runner=RUNNER)
    assert (half.score, half.metrics, half.error) == (0.5, {"exists": 1.0, "tests_pass": 0.0}, None)
    full = run_checker(task, workspace(tmp_path, **{"summary.csv": "name,total\napples,3\n"}), runner=RUNNER)
    assert (full.score, full.metrics) == (1.0, {"exists": 1.0, "tests_pass": 1.0})


@pytest.mark.parametrize(
    ("writes", "score", "metrics"),
    [
        ("printf ' 0.75\\n' > reward.txt", 0.75, {"reward": 0.75}),
        (
            'echo \'{"reward": 0.5, "acc": 1, "note": "x", "ok": true}\' > reward.json',
            0.5,
            {"reward": 0.5, "acc": 1.0},
        ),
        ("echo '{\"acc\": 1.0}' > reward.json; echo 0.25 > reward.txt", 0.25, {"acc": 1.0, "reward": 0.25}),
        ('echo \'{"a": 1.0, "b": 0.0}\' > reward.json; echo 0.9 > ignored.txt', 0.5, {"a": 1.0, "b": 0.0}),
        ("echo 1 > reward.txt; (sleep 1; echo 0 > reward.txt) & disown", 1.0, {"reward": 1.0}),
        ("echo 0 > reward.txt; (sleep 0.3; echo 1 > reward.txt) & disown", 0.0, {"reward": 0.0}),
    ],
    ids=["txt", "json-reward-key", "json-plus-txt", "json-mean", "late-writer-0", "late-writer-1"],
)
def test_reward_files_as_harbor_reads_them(
    tmp_path: Path, writes: str, score: float, metrics: dict[str, float]
) -> None:
    """reward.json wins, numbers only, reward.txt fills in `reward`; a program the tests left running
    is killed before anything is read (the late writers lose)."""
    task = harbor_task(tmp_path, f"cd /logs/verifier\n{writes}\n")
    result = run_checker(task, workspace(tmp_path), runner=RUNNER)
    assert (result.score, result.metrics, result.error) == (score, metrics, None)


HOSTILE_REWARDS = {
    "none": ("true", "no reward: the tests wrote neither /logs/verifier/reward.txt nor reward.json"),
    "non-utf8": ("printf '\\xff1' > reward.txt", "/logs/verifier/reward.txt: not UTF-8"),
    "huge": (
        "head -c 70000 /dev/zero | tr '\\0' 1 > reward.txt",
        "/logs/verifier/reward.txt: over 65536 bytes",
    ),
    "nan": ("echo nan > reward.txt", "/logs/verifier/reward.txt is not finite: nan"),
    "inf-digits": ("printf '9%.0s' $(seq 400) > reward.txt", "/logs/verifier/reward.txt is not finite: inf"),
    "negative": ("echo -1 > reward.txt", "/logs/verifier/reward.txt is negative: -1.0"),
    "text": ("echo yes > reward.txt", "/logs/verifier/reward.txt is not a number: 'yes\\n'"),
    "empty": (": > reward.txt", "/logs/verifier/reward.txt is not a number: ''"),
    "fifo": ("mkfifo reward.txt", "/logs/verifier/reward.txt: not a regular file"),
    "link": (
        "ln -s /etc/passwd reward.txt",
        "/logs/verifier/reward.txt: cannot be opened (Too many levels of symbolic links)",
    ),
    "dir": ("mkdir reward.json", "/logs/verifier/reward.json: not a regular file"),
    "json-nan": (
        "echo '{\"reward\": NaN}' > reward.json",
        "/logs/verifier/reward.json 'reward' is not finite: nan",
    ),
    "json-negative": (
        "echo '{\"reward\": -0.5}' > reward.json",
        "/logs/verifier/reward.json 'reward' is negative: -0.5",
    ),
    "json-list": ("echo '[1.0]' > reward.json", "/logs/verifier/reward.json holds list, not an object"),
    "json-strings": ('echo \'{"reward": "1"}\' > reward.json', "/logs/verifier/reward.json holds no number"),
    "json-deep": (
        "python3 -c \"print('['*5000 + ']'*5000)\" > reward.json",
        "/logs/verifier/reward.json is not JSON",
    ),
    "json-digits": (
        "python3 -c \"print('{\\\"r\\\": ' + '1'*5000 + '}')\" > reward.json",
        "/logs/verifier/reward.json is not JSON",
    ),
    "json-surrogate": (  # a metric name no record can hold: writing the rollout failed
        'printf \'{"\\\\ud800": 1.0, "reward": 1.0}\' > reward.json',
        "/logs/verifier/reward.json is not JSON",
    ),
    "json-bad-txt-fine": (
        "echo '{' > reward.json; echo 1 > reward.txt",
        "/logs/verifier/reward.json is not JSON",
    ),
}


@pytest.mark.security
@pytest.mark.parametrize("case", sorted(HOSTILE_REWARDS))
def test_a_reward_that_cannot_be_read_is_the_policys_failure(tmp_path: Path, case: str) -> None:
    writes, error = HOSTILE_REWARDS[case]
    task = harbor_task(tmp_path, f"cd /logs/verifier\n{writes}\n")
    result = run_checker(task, workspace(tmp_path), runner=RUNNER)
    assert (result.score, result.metrics, result.error) == (0.0, {}, error)


def test_a_verifier_that_hangs_is_the_policys_failure_and_one_that_cannot_start_infra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    task = harbor_task(tmp_path, "sleep 60\n", "[verifier]\ntimeout_sec = 2.0\n")
    hung = run_checker(task, workspace(tmp_path), runner=RUNNER)
    assert (hung.score, hung.error, hung.timed_out) == (0.0, "verifier timed out after 2 s", True)
    with pytest.raises(VerifierError, match="only in the verifier's own sandbox"):
        run_checker(task, workspace(tmp_path))  # LocalRunner
    monkeypatch.setenv("HARNESSRL_SANDBOX_AGENT", "none")  # no sandbox can be made
    with pytest.raises(VerifierError, match="the verifier's sandbox could not be created"):
        run_checker(task, workspace(tmp_path), runner=RUNNER)


def test_preflight_names_what_cannot_be_verified(tmp_path: Path) -> None:
    online = harbor_task(tmp_path, "true\n", '[verifier]\nnetwork_mode = "public"\n', name="online")
    inherited = harbor_task(tmp_path, "true\n", "[environment]\nallow_internet = true\n", name="inherited")
    offline = harbor_task(
        tmp_path,
        "true\n",
        '[environment]\nallow_internet = true\n[verifier]\nnetwork_mode = "no-network"\n',
        name="offline",
    )
    assert [t.checker.network for t in (online, inherited, offline) if t.checker] == [True, True, False]
    with pytest.raises(TaskError) as refused:
        preflight([online, inherited, offline], allow_network=False)
    assert str(refused.value) == (
        "2 task(s) say their verifier needs the network (Harbor [verifier] network_mode): online, inherited. "
        "harnessrl verifies offline unless told otherwise; leave them out, or set "
        "verify.allow_verifier_network=true (-o verify.allow_verifier_network=true) to give their verifier "
        "(never the agent) the host's network"
    )
    preflight([online, inherited, offline], allow_network=True)
    preflight(load_tasks(HARBOR).tasks, allow_network=False)  # tasks on images are verified on them
    cfg = Config()
    with pytest.raises(TaskError, match="their verifier needs the network"):
        RolloutStack.from_config(cfg, [online])  # before any rollout, before the engine is built
    with pytest.raises(VerifierError, match="needs the network"):
        run_checker(online, workspace(tmp_path), runner=RUNNER)


def test_an_allowed_verifier_network_is_the_hosts(tmp_path: Path) -> None:
    host_net = os.readlink("/proc/self/ns/net")
    same = f'[ "$(readlink /proc/self/ns/net)" = "{host_net}" ] && r=1 || r=0\n'
    same += "echo $r > /logs/verifier/reward.txt\n"
    online = harbor_task(tmp_path, same, '[verifier]\nnetwork_mode = "public"\n', name="online")
    offline = harbor_task(tmp_path, same, name="offline")
    assert run_checker(online, workspace(tmp_path), runner=RUNNER, allow_network=True).score == 1.0
    assert run_checker(offline, workspace(tmp_path), runner=RUNNER, allow_network=True).score == 0.0


def test_tasks_check_proves_the_oracle_and_the_untouched_environment() -> None:
    result = CliRunner().invoke(app, ["tasks", "check", str(HARBOR / "hello-world")])
    assert result.exit_code == 0, result.output
    assert "1 ok, 0 failed (sandboxed)" in result.output
    result = CliRunner().invoke(app, ["tasks", "check", str(HARBOR), "--format", "harbor"])
    assert result.exit_code == 0, result.output
    assert "3 ok, 0 failed (sandboxed)" in result.output  # dockerfile-data on its image


@pytest.mark.parametrize(
    ("task_id", "harness"),
    [
        ("hello-world", "whitebox:00000"),
        ("multi-metric", "whitebox:00000"),
        pytest.param("multi-metric", "claude-code", marks=pytest.mark.harness),
    ],
)
async def test_a_rollout_replaying_solve_sh_scores_1(tmp_path: Path, task_id: str, harness: str) -> None:
    """The scripted engine replays solution/solve.sh through the harness's own shell tool, in the
    agent's sandbox at the task's workdir; the tests score it in theirs."""
    task = fixture_task(task_id)
    async with RolloutStack.from_config(scripted_config(harness, tmp_path), [task]) as stack:
        assert stack.runner is not None
        [rollout] = await stack.runner.run_many([RolloutJob(task, harness, "r")])
    assert (rollout.status, rollout.reward) == (RolloutStatus.OK, 1.0), rollout.status_reason
    assert rollout.reward_detail["code"]["mode"] == "harbor"
    assert sorted(rollout.reward_detail["code"]["metrics"]) == (
        ["reward"] if task_id == "hello-world" else ["exists", "tests_pass"]
    )


PYTEST_ONLY = """#!/bin/bash
cd /app
python3 -m pytest -q -p no:cacheprovider /tests/test_outputs.py > /logs/verifier/pytest.txt 2>&1 && r=1 || r=0
echo $r > /logs/verifier/reward.txt
"""
FORCE_PASS = """import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    outcome.get_result().outcome = "passed"
"""
TAMPER = (
    "mkdir -p /logs/verifier; echo 1 > /logs/verifier/reward.txt; "  # its own sandbox's, if it can
    "echo 1 > reward.txt; echo '{\"reward\": 1}' > reward.json; "  # rewards in the workspace
    "mkdir -p logs/verifier tests; echo 1 > logs/verifier/reward.txt; "
    "printf 'def test_ok():\\n    pass\\n' > tests/test_outputs.py; "  # its own tests/
    f"printf '%s' '{FORCE_PASS}' > conftest.py; cp conftest.py tests/conftest.py"  # conftest.py planted
)


@pytest.mark.security
async def test_an_agent_that_plants_rewards_tests_and_a_conftest_scores_0(tmp_path: Path) -> None:
    """The agent (commands through the `shell` harness, in its own sandbox at /app) writes reward
    files in its workspace and its /logs, its own tests/ and a conftest.py that passes every test.
    None of it counts: /logs/verifier and /tests are the verifier sandbox's own, and pytest, run on
    /tests/test_outputs.py, does not load /app/conftest.py."""
    from harnessrl.proxy.server import ProxyServer
    from harnessrl.proxy.testing import scripted_deps
    from harnessrl.rollout import RolloutRunner, RunnerSettings

    task = harbor_task(tmp_path, PYTEST_ONLY)
    (Path(task.source) / "tests" / "test_outputs.py").write_text(
        "from pathlib import Path\n\ndef test_done():\n    assert Path('/app/done.txt').exists()\n"
    )
    task = load_tasks(Path(task.source)).tasks[0]
    async with ProxyServer(scripted_deps(["hi"]), port=0) as server:
        settings = RunnerSettings(out_dir=tmp_path / "runs", timeout_s=30.0)
        async with RolloutRunner(server.deps.sessions, ("127.0.0.1", server.port), settings) as runner:
            tampered, honest = await runner.run_many(
                [
                    RolloutJob(task, "shell", "tamper", options={"command": TAMPER}),
                    RolloutJob(task, "shell", "honest", options={"command": "touch done.txt"}),
                ]
            )
    assert (tampered.status, tampered.reward) == (RolloutStatus.OK, 0.0), tampered.status_reason
    assert tampered.reward_detail["code"]["metrics"] == {"reward": 0.0}
    ws = Path(tampered.workdir) / "workspace"
    assert sorted(p.name for p in ws.iterdir()) == [
        "conftest.py",
        "logs",
        "reward.json",
        "reward.txt",
        "tests",
    ]
    assert (honest.status, honest.reward) == (RolloutStatus.OK, 1.0), honest.status_reason


FORGER_C = r"""
#define _GNU_SOURCE
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
__attribute__((constructor)) static void forge(void) {
    char exe[512];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return;
    exe[n] = 0;
    if (!strstr(exe, "python")) return;  /* only in the driver's process */
    const char *r = "{\"mode\": \"harbor\", \"test_status\": 0, \"left_running\": 0, \"problems\": {}, "
                    "\"reward_txt\": \"1\", \"reward_json\": null, \"stdout\": \"\"}";
    if (pwrite(3, r, strlen(r), 0) < 0) return;
    fcntl(3, F_ADD_SEALS, F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE);
    _exit(0);
}
"""


@pytest.mark.security
@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")
def test_a_library_preloaded_into_the_tests_cannot_forge_a_report(tmp_path: Path) -> None:
    """A task whose [verifier] env preloads a library from the workdir: the agent leaves one there
    whose constructor, in any python process, writes and seals a report of reward 1 on fd 3 (what
    forged the in-sandbox driver's report before the env was kept from it). There is no report to
    forge now: the host reads the reward files itself once every process is gone."""
    import subprocess

    ws = workspace(tmp_path)
    (tmp_path / "forge.c").write_text(FORGER_C)
    subprocess.run(
        ["cc", "-shared", "-fPIC", "-o", str(ws / "forge.so"), str(tmp_path / "forge.c")], check=True
    )
    toml = '[verifier]\ntimeout_sec = 20.0\nenv = { LD_PRELOAD = "/app/forge.so" }\n'
    task = harbor_task(tmp_path, "echo 0 > /logs/verifier/reward.txt\n", toml)
    result = run_checker(task, ws, runner=RUNNER)
    assert (result.score, result.metrics, result.error) == (0.0, {"reward": 0.0}, None)


def test_the_layer_rule_keeps_the_work_and_drops_the_system(tmp_path: Path) -> None:
    """`admit_layer` on a hand-made layer (what `copy_untrusted(layer=True)` leaves): system folders,
    files and hidden folders and node_modules at the top of /, and the image's own runtime prefix
    (/opt/venv, from its PATH) go, whatever lies where the verifier mounts its folders goes, a link on
    the way to a mount goes; the working folder is kept even inside /usr, and so is the rest."""
    from harnessrl.verify.harbor_roots import admit_layer, runtime_folders

    layer = tmp_path / "layer"
    for rel in (
        "usr/local/bin/python3",
        "etc/ld.so.preload",
        "etc/passwd",
        "usr/src/app/main.py",
        "usr/lib/python3/dist-packages/evil.pth",
        "conftest.py",
        "opt/tool/version",
        "opt/harnessrl/agent",
        "tests/test.sh",
        "root/.bashrc",
        "srv/data.csv",
        "node_modules/semver/index.js",
        ".git/config",
        "opt/venv/bin/python3",
        "opt/venv/lib/python3.11/site-packages/forge.pth",
        "output/answer.txt",
    ):
        (layer / rel).parent.mkdir(parents=True, exist_ok=True)
        (layer / rel).write_text("x")
    (layer / "logs").symlink_to("/tmp")
    (layer / "pytest.ini").symlink_to("/srv/data.csv")
    os.mknod(layer / "usr" / "local" / "bin" / "hello", 0o600 | 0o020000, os.makedev(0, 0))  # a whiteout
    env = {"PATH": "/opt/venv/bin:/usr/local/bin:/usr/bin:/bin:/usr/src/app/bin", "PYTHONPATH": "/srv/lib"}
    runtime = runtime_folders(env)
    assert runtime == ["opt/venv", "srv/lib"]  # /usr is the system's already
    admitted = admit_layer(layer, "/usr/src/app", "/root", runtime)
    assert (admitted.refused, admitted.count) == ("", 13)
    assert admitted.dropped == [
        "/.git/config",
        "/conftest.py",
        "/etc/ld.so.preload",
        "/logs (a link)",
        "/node_modules/semver/index.js",
        "/opt/venv/bin/python3",
        "/opt/venv/lib/python3.11/site-packages/forge.pth",
        "/pytest.ini (a link)",
        "/root/.bashrc",
        "/tests/test.sh",
        "/usr/lib/python3/dist-packages/evil.pth",
        "/usr/local/bin/hello (deleted)",
        "/usr/local/bin/python3",
    ]
    kept = sorted(str(p.relative_to(layer)) for p in layer.rglob("*") if not p.is_dir())
    assert kept == ["opt/tool/version", "output/answer.txt", "srv/data.csv", "usr/src/app/main.py"]
    work = tmp_path / "work-layer" / "app" / "node_modules" / ".bin" / "tool"
    work.parent.mkdir(parents=True)
    work.write_text("x")  # a runtime folder inside the working folder: the work is kept whole
    on_path = runtime_folders({"PATH": "/app/node_modules/.bin:/app/bin:/usr/bin"})
    assert on_path == ["app/node_modules/.bin", "app"]
    assert admit_layer(tmp_path / "work-layer", "/app", "/root", on_path).count == 0 and work.is_file()
    (layer / "app").symlink_to("/etc")
    refused = admit_layer(layer, "/app/sub", "/root")
    assert refused.refused == "the working folder /app/sub is no longer a folder: /app is a link"
