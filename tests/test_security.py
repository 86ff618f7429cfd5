"""Attacks from inside a real sandbox, each one that was once reproduced against harnessrl: every test
here runs the attack and shows it blocked. Marker `security` (part of the default run).

Wiring as a rollout is wired: agent commands through the `shell` harness against the real proxy
(scripted engine), the default bubblewrap sandbox, the sandboxed checker.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import stat
from pathlib import Path
from typing import Any

import pytest
from support import workspace

from harnessrl.config import SandboxConfig
from harnessrl.proxy.server import ProxyServer
from harnessrl.proxy.testing import scripted_deps
from harnessrl.rollout import RolloutJob, RolloutRunner, RunnerSettings
from harnessrl.rollout.status import Happened
from harnessrl.sandbox import Sandbox, SandboxSpec, cgroups, identity
from harnessrl.sandbox.fscopy import copy_untrusted
from harnessrl.sandbox.protocol import ProtocolError, check_exec_reply, read_reply
from harnessrl.tasks import load_tasks, materialize_workspace
from harnessrl.types import Checker, RolloutStatus, SandboxError, Task, TaskFile
from harnessrl.verify import run_checker
from harnessrl.verify.sandboxed import SandboxCommandRunner

pytestmark = [
    pytest.mark.security,
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed"),
    pytest.mark.usefixtures("sandbox_agent"),  # every attack against both agents
]
ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="harnessrl runs as an ordinary user here")
BUNDLED = Path(__file__).resolve().parents[1] / "src" / "harnessrl" / "tasks" / "bundled"
CLAWGYM_MOUNT = "/root/.openclaw/workspace"


async def run_in(sb: Sandbox, script: str, timeout_s: float = 30.0) -> tuple[int, str, str]:
    res = await sb.exec(["sh", "-c", script], timeout_s=timeout_s)
    return res.returncode, res.stdout, res.stderr


# ---- 1. never host root; /proc/sys read-only; seccomp --------------------------------------------


@ROOT_ONLY
async def test_sandbox_processes_are_not_host_root(sb_base: Path) -> None:
    async with await Sandbox.create(SandboxSpec(base_dir=sb_base)) as sb:
        task = asyncio.create_task(run_in(sb, "grep CapEff /proc/self/status; exec sleep 987671"))
        for _ in range(1200):  # up to a minute on a loaded machine
            pids = [p for p in Path("/proc").iterdir() if p.name.isdigit() and _cmdline(p) == "sleep 987671"]
            if pids:
                break
            await asyncio.sleep(0.05)
        uids = {_host_uid(p) for p in pids}
        assert sb._proc is not None
        agent = Path(f"/proc/{sb._proc.pid}/task/{sb._proc.pid}/children").read_text().split()
        uids.add(_host_uid(Path(f"/proc/{agent[0]}")))
        await sb.destroy()
        with pytest.raises(SandboxError):
            await task
    assert sb.uid >= identity.UID_BASE
    assert uids == {sb.uid}  # real, effective, saved and filesystem uid of the agent and a command


def _cmdline(p: Path) -> str:
    try:
        return p.joinpath("cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
    except OSError:
        return ""


def _host_uid(p: Path) -> int:
    line = next(x for x in p.joinpath("status").read_text().splitlines() if x.startswith("Uid:"))
    (uid,) = set(line.split()[1:])
    return int(uid)


async def test_commands_have_no_capabilities(sb_base: Path) -> None:
    async with await Sandbox.create(SandboxSpec(base_dir=sb_base)) as sb:
        _, out, _ = await run_in(sb, "grep -E 'Cap(Eff|Prm|Bnd)|NoNewPrivs|Seccomp:' /proc/self/status")
    zero = "0" * 16
    assert out.split() == [
        "CapPrm:",
        zero,
        "CapEff:",
        zero,
        "CapBnd:",
        zero,
        "NoNewPrivs:",
        "1",
        "Seccomp:",
        "2",
    ]


async def test_no_proc_sys_file_is_writable_and_core_pattern_holds(sb_base: Path) -> None:
    probe = (
        "import os\n"
        "ok = bad = 0\n"
        "for d, _, fs in os.walk('/proc/sys'):\n"
        "    for f in fs:\n"
        "        try:\n"
        "            os.close(os.open(os.path.join(d, f), os.O_WRONLY)); bad += 1; print('WRITABLE', d, f)\n"
        "        except OSError:\n"
        "            ok += 1\n"
        "print('denied', ok, 'writable', bad)\n"
    )
    before = Path("/proc/sys/kernel/core_pattern").read_text()
    async with await Sandbox.create(SandboxSpec(base_dir=sb_base)) as sb:
        res = await sb.exec(["python3", "-c", probe], timeout_s=60)
        rc, _, err = await run_in(sb, "echo '|/workspace/x.sh' > /proc/sys/kernel/core_pattern")
    assert "writable 0" in res.stdout and int(res.stdout.split()[1]) > 100, res.stdout[-500:]
    assert rc != 0 and "Read-only file system" in err
    assert Path("/proc/sys/kernel/core_pattern").read_text() == before


async def test_seccomp_refuses_namespaces_mounts_ptrace_and_keyrings(sb_base: Path) -> None:
    probe = (
        "import ctypes, os\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "def call(nr, *args):\n"
        "    r = libc.syscall(nr, *args)\n"
        "    return 'ok' if r >= 0 else os.strerror(ctypes.get_errno())\n"
        "print('ptrace', call(101, 16, 1, 0, 0))\n"  # PTRACE_ATTACH to pid 1 (the agent)
        "print('unshare', call(272, 0x10000000))\n"  # CLONE_NEWUSER
        "print('mount', call(165, b'none', b'/tmp', b'tmpfs', 0, 0))\n"
        "print('keyctl', call(250, 0, 0, 0, 0, 0))\n"
        "print('bpf', call(321, 0, 0, 0))\n"
        "print('io_uring', call(425, 8, 0))\n"
    )
    async with await Sandbox.create(SandboxSpec(base_dir=sb_base)) as sb:
        res = await sb.exec(["python3", "-c", probe], timeout_s=30)
        forked = await sb.exec(["sh", "-c", "(echo child) && unshare -U true; echo rc=$?"])
    lines = dict(line.split(" ", 1) for line in res.stdout.splitlines())
    assert lines == {
        "ptrace": "Operation not permitted",
        "unshare": "Operation not permitted",
        "mount": "Operation not permitted",
        "keyctl": "Operation not permitted",
        "bpf": "Operation not permitted",
        "io_uring": "Function not implemented",
    }, res.stdout + res.stderr
    assert forked.stdout == "child\nrc=1\n"  # fork still works (glibc falls back from clone3)


@ROOT_ONLY
async def test_a_base_folder_another_user_could_have_prepared_is_refused(tmp_path: Path) -> None:
    """/dev/shm is world-writable: a local user who made `harnessrl` there first swapped the agent
    binary (renameat2 RENAME_EXCHANGE) between root's check of it and root's run of it, and root ran
    the user's program. A base folder of another uid, one that others may write, or one under a
    folder another user could change is refused with a clear error; nothing is built or run there."""
    from harnessrl.sandbox import folders

    squat = tmp_path / "squat"
    squat.mkdir()
    os.chown(squat, 65534, 65534)
    with pytest.raises(SandboxError, match=r"uid 65534\): someone else may have made it"):
        await Sandbox.create(SandboxSpec(base_dir=squat))
    assert folders.native_agent(squat) is None
    assert folders.compiled_agent("python3", squat) == folders.AGENT_FILE
    assert list(squat.iterdir()) == []
    writable = tmp_path / "writable"
    writable.mkdir(mode=0o777)
    writable.chmod(0o777)
    with pytest.raises(SandboxError, match="only it may write"):
        await Sandbox.create(SandboxSpec(base_dir=writable))
    with pytest.raises(SandboxError, match=r"its parent .*writable \(drwxrwxrwx, uid 0\) could be changed"):
        await Sandbox.create(SandboxSpec(base_dir=writable / "base"))
    sticky = tmp_path / "sticky"
    sticky.mkdir()
    sticky.chmod(0o1777)  # as /dev/shm and /tmp: others cannot rename or remove what is ours
    folders.ensure_base(sticky / "base")
    assert stat.S_IMODE((sticky / "base").stat().st_mode) == 0o711


# ---- 2. nothing the agent can write is read by the host by path ----------------------------------


async def test_no_io_folder_and_redirected_output_cannot_reach_the_host(sb_base: Path) -> None:
    spec = SandboxSpec(base_dir=sb_base, max_file_mb=4)
    async with await Sandbox.create(spec) as sb:
        _, out, _ = await run_in(sb, "ls -A /opt/harnessrl; ls -l /proc/self/fd/1")
        assert out.split("\n")[:2] in (["agent", "sock"], ["agent.pyc", "sock"], ["agent.py", "sock"])
        assert "memfd:" in out  # stdout is a host memory file, not a path inside the sandbox
        # Replacing its own stdout with a FIFO, a link to the host's environment or /dev/zero
        # changes nothing on the host, which reads only its own descriptor, bounded.
        script = "mkfifo /tmp/f; exec >/tmp/f 2>/proc/self/environ; echo gone"
        res = await sb.exec(["sh", "-c", script], timeout_s=10)
        assert (res.stdout, res.timed_out) == ("", True)
        res = await sb.exec(["sh", "-c", "cat /dev/zero"], timeout_s=30)
        assert res.returncode != 0 and len(res.stdout) == 4 * 1024 * 1024  # RLIMIT_FSIZE on the memfd
    assert "HARNESSRL" not in res.stdout and "PATH=" not in res.stderr


# ---- 3. the control channel cannot be forged ----------------------------------------------------


async def test_commands_cannot_reach_the_agents_pipes(sb_base: Path) -> None:
    forged = '{"id": 0, "rc": 0, "timed_out": false, "error": ""}'
    frame = f"printf '\\000\\000\\000\\{len(forged):03o}{forged}'"
    script = (
        f"for fd in 0 1 3; do {frame} > /proc/1/fd/$fd 2>/dev/null && echo WROTE $fd; done; "
        "kill -9 1 2>/dev/null; kill -STOP 1 2>/dev/null; "
        "cat /proc/1/environ >/dev/null 2>&1 || echo no-env; "
        "sleep 2; echo slept"
    )
    async with await Sandbox.create(SandboxSpec(base_dir=sb_base)) as sb:
        res = await sb.exec(["sh", "-c", script], timeout_s=20)
        again = await sb.exec(["echo", "still here"])
    assert (res.returncode, res.stdout) == (0, "no-env\nslept\n")
    assert res.duration_s >= 2.0
    assert again.stdout == "still here\n"


PRLIMIT_PROBE = """
import resource
R = resource
for name, res in (("nofile", R.RLIMIT_NOFILE), ("cpu", R.RLIMIT_CPU)):
    try:
        R.prlimit(1, res, (0, 0) if name == "nofile" else (1, 1))
        print(name, "set")
    except PermissionError:
        print(name, "refused")
print("read", R.prlimit(1, R.RLIMIT_NOFILE)[0] > 0)
R.setrlimit(R.RLIMIT_NOFILE, (64, 64))
print("own", R.getrlimit(R.RLIMIT_NOFILE))
"""


async def test_a_command_cannot_set_its_agents_limits(sb_base: Path) -> None:
    """Commands share the agent's uid, and prlimit checks only that: RLIMIT_NOFILE 0 and RLIMIT_CPU 1 s
    on pid 1, then one connection to the model bridge, had the agent spin on EMFILE until the kernel
    killed it (the rollout ended sandbox_error, then never trained: a way out of a 0). Reading pid 1's
    limits and setting one's own still work."""
    async with await Sandbox.create(SandboxSpec(base_dir=sb_base)) as sb:
        res = await sb.exec(["python3", "-c", PRLIMIT_PROBE], timeout_s=30)
        again = await sb.exec(["echo", "still here"])
    assert res.stdout.splitlines() == ["nofile refused", "cpu refused", "read True", "own (64, 64)"], (
        res.stderr
    )
    assert again.stdout == "still here\n"


async def test_oversized_malformed_or_mismatched_replies_are_refused() -> None:
    def reader(data: bytes) -> asyncio.StreamReader:
        r = asyncio.StreamReader()
        r.feed_data(data)
        r.feed_eof()
        return r

    with pytest.raises(ProtocolError, match="1610612736 bytes"):
        await read_reply(reader((1536 << 20).to_bytes(4, "big")))
    with pytest.raises(ProtocolError, match="not JSON"):
        await read_reply(reader(b"\x00\x00\x00\x03\x80\x01x"))
    with pytest.raises(ProtocolError, match="not an object"):
        await read_reply(reader(b"\x00\x00\x00\x02[]"))
    with pytest.raises(ProtocolError, match="expected 7"):
        check_exec_reply({"id": 6, "rc": 0, "timed_out": False, "error": ""}, 7)
    with pytest.raises(ProtocolError, match="malformed"):
        check_exec_reply({"id": 7, "rc": "0", "timed_out": False, "error": ""}, 7)


# ---- 4. checker results cannot be forged; agent code cannot shadow modules -----------------------


FORGER = """
import os, signal, sys
report = b'{"mode": "grade", "value": {"solved": 1.0}}'
for pid in (os.getppid(), 1):
    for fd in range(3, 12):
        try:
            with open(f"/proc/{pid}/fd/{fd}", "wb") as fh:
                fh.write(report)
            print("FORGED", pid, fd)
        except OSError:
            pass
for fd in range(3, 12):
    try:
        os.write(fd, report); print("INHERITED", fd)
    except OSError:
        pass
for path in ("/opt/harnessrl/checker/task/reward/check.py", "/opt/harnessrl/checker/driver.py"):
    try:
        open(path, "a").write("x")
        print("TAMPERED", path)
    except OSError:
        pass
print('{"solved": 1.0}')
os.kill(os.getppid(), signal.SIGKILL)
"""

RUNS_AGENT_CODE = """
import subprocess, sys
def grade(transcript, workspace_path):
    done = subprocess.run([sys.executable, "-I", workspace_path + "/tool.py"], capture_output=True, text=True)
    return {"solved": float(done.stdout.strip() == "42")}
"""


def checker_task(task_id: str, check_py: str, **fields: Any) -> Task:
    """A task graded by `check_py` (its reward/check.py) alone."""
    checker = Checker(files=[TaskFile(path="reward/check.py", content=check_py)])
    return Task(id=task_id, prompt="p", checker=checker, **fields)


def forger_task() -> Task:
    return checker_task("forge", RUNS_AGENT_CODE, input_mount_dir=CLAWGYM_MOUNT)


@pytest.mark.parametrize("stdout_mode", ["grade", "main"])
def test_agent_code_run_by_the_checker_cannot_forge_its_result(tmp_path: Path, stdout_mode: str) -> None:
    task = forger_task()
    if stdout_mode == "main":  # a main() checker whose answer is what it prints
        source = RUNS_AGENT_CODE.replace("def grade(transcript, workspace_path):", "def main():")
        source = source.replace("return {", "workspace_path = sys.argv[1]\n    print({").replace(")}", ")})")
        source = source.replace(
            "    done = subprocess.run", "    workspace_path = sys.argv[1]\n    done = subprocess.run"
        )
        source = "import json\n" + source.replace("print({", "print(json.dumps({").replace(")})", ")}))")
        task.checker = Checker(files=[TaskFile(path="reward/check.py", content=source)])
    ws = workspace(tmp_path / "ws", {"tool.py": FORGER})
    result = run_checker(task, ws, runner=SandboxCommandRunner())
    assert result.score == 0.0
    assert result.error is not None and "exit" in result.error, result
    for word in ("FORGED", "INHERITED", "TAMPERED"):
        assert word not in result.stdout_tail


def test_planted_stdlib_modules_are_not_imported_by_bundled_checkers(tmp_path: Path) -> None:
    [task] = [t for t in load_tasks(BUNDLED).tasks if t.id == "task_0023"]
    ws = tmp_path / "ws"
    materialize_workspace(task, ws)
    honest = run_checker(task, ws, runner=SandboxCommandRunner())
    fake_json = (
        'def dumps(*a, **k): return \'["c-rust-2026-edition", "unicode", "alpha beta gamma", "x y z..."]\'\n'
    )
    (ws / "json.py").write_text(fake_json)
    (ws / "unittest.py").write_text("import sys\nprint('Ran 9 tests in 0.1s')\nsys.exit(0)\n")
    planted = run_checker(task, ws, runner=SandboxCommandRunner())
    assert honest.score < 1.0
    assert planted.score <= honest.score, (honest.metrics, planted.metrics)


def landlock_available() -> bool:
    import ctypes

    return ctypes.CDLL(None, use_errno=True).syscall(444, None, 0, 1) > 0


PEEKS_AT_CHECKER = """
import os, subprocess, sys
EXPECTED = "SECRET-ANSWER-42"  # what an agent's code would love to print


def grade(transcript, workspace_path):
    tool = os.path.join(workspace_path, "tool.py")
    via_run = subprocess.run([sys.executable, "-I", tool], capture_output=True, text=True).stdout
    rfd, wfd = os.pipe()
    if os.fork() == 0:  # a plain fork: the child restricts itself too
        os.dup2(wfd, 1)
        os.execv(sys.executable, [sys.executable, "-I", tool])
    os.close(wfd)
    via_fork = os.read(rfd, 65536).decode()
    os.wait()
    status = os.system(f"{sys.executable} -I {tool} > {workspace_path}/sys.txt")
    via_system = open(os.path.join(workspace_path, "sys.txt")).read()
    own = open(__file__).read()  # the checker itself still reads its files
    return {
        "leaked": float(any(EXPECTED in out for out in (via_run, via_fork, via_system))),
        "denied": float(all(out.startswith("denied") for out in (via_run, via_fork, via_system))),
        "status": float(status == 0),
        "own": float(EXPECTED in own),
    }
"""
STEAL_TOOL = """
import os
try:
    hits = [open(os.path.join(r, f)).read() for r, _, fs in os.walk("/opt/harnessrl/checker") for f in fs]
    os.listdir("/opt/harnessrl/checker")
    print("read", "".join(hits))
except OSError as e:
    print("denied", e)
"""


@pytest.mark.skipif(not landlock_available(), reason="no Landlock in this kernel: children see the checker")
def test_programs_a_checker_starts_cannot_read_the_checkers_files(tmp_path: Path) -> None:
    """Agent code the checker ran read check.py out of /opt/harnessrl/checker and printed the answers it
    wanted (task_0040: 0.33 -> 1.0). Programs a checker starts (subprocess, fork, os.system) cannot
    read or list the checker's folder; the checker itself still can."""
    task = checker_task("peek", PEEKS_AT_CHECKER)
    ws = workspace(tmp_path / "ws", {"tool.py": STEAL_TOOL})
    result = run_checker(task, ws, runner=SandboxCommandRunner())
    assert result.error is None, result
    assert result.metrics == {"leaked": 0.0, "denied": 1.0, "status": 1.0, "own": 1.0}
    assert result.children_confined is True


LAZY_IMPORT_CHECKER = """
import json, os, subprocess, sys
from datetime import datetime
HIDDEN_TOTAL = 4115


def grade(transcript, workspace_path):
    run = [sys.executable, "-I", os.path.join(workspace_path, "report.py")]
    out = subprocess.run(run, capture_output=True, text=True, timeout=20).stdout
    tried = json.loads(out.splitlines()[0])
    try:
        data = json.loads(out.splitlines()[-1])
        ok = data["total"] == HIDDEN_TOTAL and datetime.strptime(data["date"], "%Y-%m-%d").weekday() == 0
    except Exception:
        ok = False
    return {"solved": float(ok), **{k: float(v == "done") for k, v in tried.items()}}
"""
PLANT = """
import json, os
tried = {}
for name, act in [
    ("rename_opt", lambda: os.rename("/opt", "/opt.moved")),
    ("mkdir_root", lambda: os.mkdir("/planted")),
    ("write_home", lambda: open(os.path.expanduser("~/planted.py"), "w").write("x")),
    ("write_tmp", lambda: open("/tmp/ok.txt", "w").write("x")),
    ("write_ws", lambda: open(os.path.join(os.path.dirname(__file__), "mine.txt"), "w").write("x")),
]:
    try:
        act()
        tried[name] = "done"
    except OSError as e:
        tried[name] = type(e).__name__
print(json.dumps(tried))
print(json.dumps({"total": 0, "date": "nonsense"}))
"""


@pytest.mark.skipif(not landlock_available(), reason="no Landlock in this kernel: children see the checker")
def test_programs_a_checker_starts_cannot_plant_a_module_for_the_checker(tmp_path: Path) -> None:
    """The checker sandbox's root and HOME are folders of its uid: confined agent code renamed /opt,
    recreated the checker's folder with a `_strptime.py`, and the checker's next lazy import (a
    `datetime.strptime`) ran it unconfined: it read check.py and forged the report (0.0 -> 1.0).
    Children may change files only in the workspace, /tmp and /dev."""
    task = checker_task("lazy", LAZY_IMPORT_CHECKER, input_mount_dir=CLAWGYM_MOUNT)
    ws = workspace(tmp_path / "ws", {"report.py": PLANT})
    result = run_checker(task, ws, runner=SandboxCommandRunner())
    assert (result.error, result.children_confined) == (None, True), result
    done = {"rename_opt": 0.0, "mkdir_root": 0.0, "write_home": 0.0, "write_tmp": 1.0, "write_ws": 1.0}
    assert result.metrics == {"solved": 0.0, **done}
    assert not (ws / "mine.txt").exists()  # written to the sandbox's copy: the host's is never changed


STEAL_ROMAN = r"""
import json, os, re, sys
src = "".join(open(os.path.join(r, f)).read() for r, _, fs in os.walk("/opt/harnessrl/checker") for f in fs
              if f == "check.py")
if src:
    a = re.search(r"got\[0\] == (\[.*?\])\)", src).group(1)
    b = re.search(r"got\[1\] == (\[.*?\])\)", src).group(1)
    print(json.dumps([eval(a), eval(b), True, ["ERR:ValueError"] * 3]))
    sys.stdout.flush()
    os._exit(0)
"""


@pytest.mark.skipif(not landlock_available(), reason="no Landlock in this kernel: children see the checker")
def test_a_bundled_checkers_answers_cannot_be_read_by_the_code_it_runs(tmp_path: Path) -> None:
    """The attack on a real bundled task: a roman.py that, when the checker's probe imports it, prints
    the hidden expected values it found in check.py. It scored 1.0 against 0.33 untouched."""
    [task] = [t for t in load_tasks(BUNDLED).tasks if t.id == "task_0040"]
    ws = tmp_path / "ws"
    materialize_workspace(task, ws)
    honest = run_checker(task, ws, runner=SandboxCommandRunner())
    (ws / "roman.py").write_text(STEAL_ROMAN)
    stolen = run_checker(task, ws, runner=SandboxCommandRunner())
    assert honest.score < 1.0 and stolen.score <= honest.score, (honest.metrics, stolen.metrics)
    assert stolen.metrics["to_roman_hidden"] == stolen.metrics["from_roman_hidden"] == 0.0


def test_a_checker_that_hangs_is_killed_at_its_timeout(tmp_path: Path) -> None:
    hang = "import time\ndef grade(transcript, workspace_path):\n    time.sleep(1000)\n"
    task = checker_task("h", hang)
    ws = tmp_path / "ws"
    ws.mkdir()
    result = run_checker(task, ws, timeout_s=2.0, runner=SandboxCommandRunner())
    assert (result.score, result.timed_out) == (0.0, True)
    assert result.duration_s < 30


# ---- 5. links out of the workspace; artifact writing ---------------------------------------------


CHECK_ANSWER = """
from pathlib import Path
def grade(transcript, workspace_path):
    p = Path(workspace_path) / "answer.txt"
    try:
        return {"solved": float(p.read_text().strip() == "ANSWER-FROM-REWARD")}
    except OSError:
        return {"solved": 0.0}
"""


def link_task() -> Task:
    return Task(
        id="links",
        prompt="p",
        workspace=[TaskFile(path="README.md", content="task\n")],
        checker=Checker(
            files=[
                TaskFile(path="reward/check.py", content=CHECK_ANSWER),
                TaskFile(path="reward/expected.txt", content="ANSWER-FROM-REWARD\n"),
            ]
        ),
        input_mount_dir="/root/.openclaw/workspace",
    )


@pytest.fixture
async def runner(tmp_path: Path):
    async with ProxyServer(scripted_deps(["hi"]), port=0) as server:
        made: list[RolloutRunner] = []

        def make(pool_size: int | None = None, **sandbox: object) -> RolloutRunner:
            settings = RunnerSettings(
                out_dir=tmp_path / "runs",
                timeout_s=30.0,
                sandbox=SandboxConfig(pool_size=pool_size, **sandbox),  # type: ignore[arg-type]
            )
            made.append(RolloutRunner(server.deps.sessions, ("127.0.0.1", server.port), settings))
            return made[-1]

        yield make
        for r in made:
            await r.close()


LINKS = (
    "ln -s /proc/self/cwd/task/reward/expected.txt answer.txt; ln -s /opt/harnessrl/checker/task/reward r; "
    "ln -s /etc/shadow shadow; ln -s /proc/self/mem mem; ln -s /proc/self/environ env; "
    "ln -s ../../../../etc/passwd up; mkfifo fifo; mkdir d; ln -s ../README.md d/ok"
)


@pytest.mark.parametrize("pool_size", [None, 0], ids=["pooled", "fresh"])
async def test_links_out_of_the_workspace_never_score_nor_leak(runner, pool_size: int | None) -> None:
    rollout = await runner(pool_size=pool_size).run(
        RolloutJob(link_task(), "shell", "links", options={"command": LINKS})
    )
    assert rollout.status is RolloutStatus.OK, rollout.status_reason
    assert rollout.reward == 0.0
    rdir = Path(rollout.workdir)
    left = sorted(p.name for p in (rdir / "workspace").iterdir())
    assert left == ["README.md", "d"]
    assert os.readlink(rdir / "workspace" / "d" / "ok") == "../README.md"
    skipped = rollout.reward_detail["workspace"]["skipped"]
    assert len(skipped) == 7, skipped
    diff = (rdir / "workspace.diff").read_text()
    assert "root:" not in diff and "ANSWER-FROM-REWARD" not in diff
    assert "PATH=" not in diff


CHAIN = (
    "ln -s . l; ln -s " + "l/" * 8 + "../" * 8 + "opt/harnessrl/checker/task/reward/expected.txt answer.txt"
)


@pytest.mark.parametrize("pool_size", [None, 0], ids=["pooled", "fresh"])
async def test_a_chain_of_links_that_reads_as_inside_cannot_reach_the_checker(runner, pool_size) -> None:
    """`l -> .` then `answer.txt -> l/l/../../...`: by its text the second stays inside, but the kernel
    resolves `l/..` physically (`l` is `.`), so it climbed to the checker's `expected.txt` (scored 1.0)."""
    rollout = await runner(pool_size=pool_size).run(
        RolloutJob(link_task(), "shell", "chain", options={"command": CHAIN})
    )
    assert rollout.status is RolloutStatus.OK, rollout.status_reason
    assert rollout.reward == 0.0
    ws = Path(rollout.workdir) / "workspace"
    assert sorted(p.name for p in ws.iterdir()) == ["README.md", "l"] and os.readlink(ws / "l") == "."
    (skipped,) = rollout.reward_detail["workspace"]["skipped"]
    assert skipped.startswith("answer.txt: link to 'l/l/")


def test_link_rule_keeps_what_stays_inside_and_refuses_climbs_after_a_name() -> None:
    from harnessrl.sandbox.fscopy import link_stays_inside as inside

    assert (
        inside("", "a/b") and inside("", "l/l/x") and inside("d", "../README.md") and inside("d/e", "../../x")
    )
    assert inside("", ".") and inside("d", "./../x/./y")
    assert not inside("", "../x") and not inside("d", "../../x") and not inside("", "/etc/passwd")
    assert not inside("", "l/../x") and not inside("d/e", "../f/../../x") and not inside("", "")


async def test_a_workspace_over_the_caps_is_never_scored(runner) -> None:
    """The clean-up stops at the file cap, so links past it were never checked: no checker runs."""
    run = runner(pool_size=0)
    job = RolloutJob(link_task(), "shell", "capped", options={"command": CHAIN})
    rollout = await run.prepare(job)
    rollout.reward_detail["workspace"] = {"truncated": "more than 3 files"}
    done = await run.complete(job, rollout, Happened(workspace_over="more than 3 files", calls=[]))
    assert (done.status, done.fault) == (RolloutStatus.HARNESS_ERROR, "policy")
    assert done.reward is None and "code" not in done.reward_detail
    assert json.loads((Path(done.workdir) / "reward.json").read_text())["reward"] is None


CURL = (
    'curl -s -X POST "$HARNESSRL_BASE_URL/v1/chat/completions" -H "content-type: application/json" '
    '-H "authorization: Bearer $HARNESSRL_API_KEY" -d \'{"model": "m", "messages": [{"role": "user", '
    '"content": "hi"}]}\' > /dev/null'
)
HOG = "python3 -c 'import time; x = bytearray(90 << 20); x[::4096] = b\"x\" * len(x[::4096]); time.sleep(20)'"
RAISE_OOM = "echo 1000 > /proc/1/oom_score_adj && echo RAISED"
OOM_AGENT = f"{CURL}; {RAISE_OOM}; for i in 1 2 3; do {HOG} & done; wait; echo done"
SLEEPER = f"{CURL}; sleep 60"


@pytest.mark.skipif(cgroups.layout()[0] == "none", reason="no cgroups here: memory is capped per process")
async def test_commands_cannot_make_the_agent_the_oom_victim(runner) -> None:
    """Commands run as uid 1000 inside (bwrap.INSIDE_UID), so the non-dumpable agent's /proc entries
    belong to real root: `echo 1000 > /proc/1/oom_score_adj` is refused (it made the agent the OOM
    victim and ended the sandbox while it was uid 0 inside). Under a 200 MB cap the cgroup's OOM
    killer takes a hog, never the agent: the sandbox lives, the rollout ends with its real status."""
    rollout = await runner(pool_size=0, memory_mb=200).run(
        RolloutJob(link_task(), "shell", "oom", options={"command": OOM_AGENT})
    )
    assert rollout.status is not RolloutStatus.SANDBOX_ERROR, rollout.status_reason
    assert len(rollout.calls) == 1
    out = (Path(rollout.workdir) / "harness.stdout").read_text()
    assert "RAISED" not in out and out.rstrip().endswith("done"), out[-500:]


def _agents_of(pid: int) -> list[int]:
    """Pids of in-sandbox agents among the descendants of `pid` (this test's own sandboxes only)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                ppid = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            todo.append(child)
            try:
                argv = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if os.path.basename(argv[0]) != b"bwrap" and any(
                a.startswith(b"/opt/harnessrl/agent") for a in argv
            ):
                found.append(child)
    return found


async def test_a_sandbox_lost_under_a_command_is_trained_as_a_failure(runner) -> None:
    """A sandbox that dies under a command (here its agent is SIGKILLed from the host once the
    rollout made its call; the policy can no longer do it itself, see the test above) cannot be
    told apart from one the policy killed: it must never be a way out of a 0. The rollout is the
    policy's sandbox_error, and the failure policy trains it with reward 0 on the calls it made."""
    from harnessrl.config import Config
    from harnessrl.train.batch import collect_trees

    run = runner(pool_size=0)
    task = asyncio.create_task(
        run.run(RolloutJob(link_task(), "shell", "lost", options={"command": SLEEPER}))
    )
    agents: list[int] = []
    for _ in range(600):
        await asyncio.sleep(0.05)
        agents = _agents_of(os.getpid())
        if agents and run.sessions is not None and run.sessions.calls("lost"):
            break
    assert len(agents) == 1, agents
    os.kill(agents[0], 9)
    rollout = await asyncio.wait_for(task, timeout=60)
    assert (rollout.status, rollout.fault) == (RolloutStatus.SANDBOX_ERROR, "policy"), rollout.status_reason
    assert "agent lost during exec" in rollout.status_reason and len(rollout.calls) == 1
    batch = collect_trees([rollout], Config())
    assert [(s.rollout_id, s.reward) for s in batch.samples] == [("lost", 0.0)]
    assert batch.failures_trained == {"sandbox_error": 1}


GARBAGE_ANSWER = f"{CURL}; printf '\\377\\376' > answer.txt"


async def test_a_workspace_that_makes_the_checker_raise_is_trained_as_a_failure(runner) -> None:
    """A non-UTF-8 answer.txt makes this checker raise: the checker failed on the policy's workspace,
    so it is the policy's verifier_error (trained with reward 0), not an infrastructure fault that
    training drops (an honest wrong answer scores 0 and is trained: the crash must not do better)."""
    from harnessrl.config import Config
    from harnessrl.train.batch import collect_trees

    rollout = await runner(pool_size=0).run(
        RolloutJob(link_task(), "shell", "garbage", options={"command": GARBAGE_ANSWER})
    )
    assert (rollout.status, rollout.fault) == (RolloutStatus.VERIFIER_ERROR, "policy"), rollout.status_reason
    assert "UnicodeDecodeError" in rollout.status_reason and rollout.reward == 0.0
    batch = collect_trees([rollout], Config())
    assert [(s.rollout_id, s.reward) for s in batch.samples] == [("garbage", 0.0)]


SURROGATE_BOMB = (
    "python3 -c 'import json, os, urllib.request as u\n"
    'body = {"model": "m", "messages": [{"role": "system", "content": "\\ud800" + "x" * 100}, '
    '{"role": "user", "content": "hi"}]}\n'
    'req = u.Request(os.environ["HARNESSRL_BASE_URL"] + "/v1/chat/completions", json.dumps(body).encode(), '
    '{"content-type": "application/json", "authorization": "Bearer " + os.environ["HARNESSRL_API_KEY"]})\n'
    "try:\n    u.urlopen(req)\nexcept Exception as e:\n    print(e)\n' > bomb.txt"
)


async def test_a_request_that_breaks_recording_is_refused_and_never_a_way_out(runner) -> None:
    """A lone UTF-16 surrogate ("\\ud800", valid JSON, not Unicode) in a request sent with the rollout's
    key: the record stage failed to digest it, the call was lost, and the rollout ended engine_error
    of the infrastructure, never trained (with its real calls). Now it is a 400; and a call that
    cannot be recorded is the policy's failure anyway (tests/test_proxy_robustness.py)."""
    rollout = await runner(pool_size=0).run(
        RolloutJob(link_task(), "shell", "bomb", options={"command": f"{CURL}; {SURROGATE_BOMB}"})
    )
    assert rollout.status is RolloutStatus.OK, rollout.status_reason
    assert len(rollout.calls) == 1 and rollout.reward == 0.0
    assert "HTTP Error 400" in (Path(rollout.workdir) / "workspace" / "bomb.txt").read_text()


NESTED_JSON_BOMB = """
import json, os, urllib.request as u
base, key = os.environ["HARNESSRL_BASE_URL"], os.environ["HARNESSRL_API_KEY"]
def post(path, body):
    req = u.Request(base + path, json.dumps(body).encode(),
                    {"content-type": "application/json", "authorization": "Bearer " + key})
    try:
        return u.urlopen(req).status
    except u.HTTPError as e:
        return e.code
for args in ("[" * 5000 + "]" * 5000, '{"n": ' + "9" * 5000 + "}"):
    call = {"id": "c1", "type": "function", "function": {"name": "exec", "arguments": args}}
    chat = {"model": "m", "messages": [{"role": "user", "content": "hi"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": "ok"}]}
    item = {"type": "function_call", "call_id": "c1", "name": "exec", "arguments": args}
    responses = {"model": "m", "input": [{"role": "user", "content": "hi"}, item,
                 {"type": "function_call_output", "call_id": "c1", "output": "ok"}]}
    print(post("/v1/chat/completions", chat), post("/v1/responses", responses))
"""


async def test_nested_json_in_tool_call_arguments_is_a_400_from_inside_a_sandbox(runner) -> None:
    """Issue 31.1 from where it came: a rollout's own commands send its endpoint an assistant turn
    whose tool-call arguments (Chat `function.arguments`, Responses `function_call.arguments`) hold
    JSON nested 5,000 deep or a 5,000-digit integer. That was a 500 and a traceback every time (and
    SDKs retry a 500: a harness made to spin, a log flooded); now a 400 naming the field, each call
    refused before it is recorded, the rollout scored as usual."""
    script = NESTED_JSON_BOMB.replace("'", "'\\''")
    command = f"{CURL}; python3 -c '{script}' > bomb.txt"
    rollout = await runner(pool_size=0).run(
        RolloutJob(link_task(), "shell", "nested", options={"command": command})
    )
    assert (rollout.status, rollout.reward) == (RolloutStatus.OK, 0.0), rollout.status_reason
    assert len(rollout.calls) == 1  # the curl's; the refused ones were never recorded
    codes = (Path(rollout.workdir) / "workspace" / "bomb.txt").read_text().split()
    assert codes == ["400"] * 4


DEEP = "ln -s ../../../../etc/passwd up; for i in $(seq 1500); do mkdir d && cd d || break; done"


@pytest.mark.parametrize("pool_size", [None, 0], ids=["pooled", "fresh"])
async def test_a_workspace_deeper_than_any_walk_allows_is_cut_down_to_size(runner, pool_size) -> None:
    """A folder 1,500 deep overflowed os.walk's recursion in the clean-up of a bound workspace (an
    internal error of the infrastructure, never trained, the workspace half cleaned), and
    shutil.rmtree's wherever the host removed it. Walks are iterative; folders deeper than 64 are
    left out of a pooled copy and removed from a bound workspace (by descriptors, any depth), and
    the rollout is scored as usual."""
    rollout = await runner(pool_size=pool_size).run(
        RolloutJob(link_task(), "shell", "deep", options={"command": f"{CURL}; {DEEP}"})
    )
    assert "traceback" not in rollout.reward_detail, rollout.reward_detail["traceback"]
    assert (rollout.status, rollout.reward) == (RolloutStatus.OK, 0.0), rollout.status_reason
    skipped = rollout.reward_detail["workspace"]["skipped"]
    assert any("deeper than 64 folders" in s for s in skipped), skipped
    ws = Path(rollout.workdir) / "workspace"
    depth = max(len(Path(f).relative_to(ws).parts) for f, _, _ in os.walk(ws))  # now shallow enough
    assert depth == 64
    assert (Path(rollout.workdir) / "workspace.diff").is_file()


async def test_a_link_to_proc_self_mem_does_not_break_the_batch(runner) -> None:
    run = runner(pool_size=0)
    jobs = [
        RolloutJob(link_task(), "shell", "mem", options={"command": "ln -s /proc/self/mem m"}),
        RolloutJob(link_task(), "shell", "plain", options={"command": "echo ANSWER > answer.txt"}),
    ]
    mem, plain = await run.run_many(jobs)
    assert (mem.status, plain.status) == (RolloutStatus.OK, RolloutStatus.OK)
    assert plain.reward == 0.0 and json.loads((Path(plain.workdir) / "reward.json").read_text())


# ---- 6. attacker-sized file work stays off the event loop and within caps ------------------------


async def test_many_files_are_capped_and_copied_off_the_loop(sb_base: Path, tmp_path: Path) -> None:
    spec = SandboxSpec(base_dir=sb_base, max_files=3000)
    sb = await Sandbox.create(spec)
    _, out, _ = await run_in(
        sb, "i=0; while [ $i -lt 5000 ]; do true > f$i || break; i=$((i+1)); done; echo made $i", 120
    )
    made = int(out.split()[-1])
    if sb.tmpfs:
        assert made < 3000  # the tmpfs's inode cap
    ticks = 0
    stop = asyncio.Event()

    async def ticker() -> None:
        nonlocal ticks
        while not stop.is_set():
            ticks += 1
            await asyncio.sleep(0)

    tick = asyncio.create_task(ticker())
    report = await sb.destroy(keep_workspace=tmp_path / "final")
    stop.set()
    await tick
    assert report is not None and report.files <= 3000
    assert ticks > 10  # the loop kept running while the files were copied
    assert not sb.root.exists()


# ---- 7. limits per sandbox -------------------------------------------------------------------------


HOLD_CONNECTIONS = """
import socket, time
held, refused = [], 0
for i in range(40):
    s = socket.create_connection(("127.0.0.1", 18080))
    s.settimeout(10)
    s.sendall(b"GET / HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n")
    try:
        ok = s.recv(100).startswith(b"HTTP/1.1 200")
    except OSError:
        ok = False
    if ok:
        held.append(s)  # an idle keep-alive connection, held open
    else:
        refused += 1
print(len(held), refused)
"""


async def test_one_sandbox_cannot_take_every_model_connection(sb_base: Path) -> None:
    """1,100 idle keep-alive connections from one sandbox took the proxy's whole (shared) connection cap,
    and every other rollout's calls got 503: a sandbox holds at most `max_connections` at once."""
    open_now = peak = 0

    async def keep_alive(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal open_now, peak
        open_now += 1
        peak = max(peak, open_now)
        try:
            while await reader.readuntil(b"\r\n\r\n"):
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            open_now -= 1
            writer.close()

    server = await asyncio.start_server(keep_alive, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    spec = SandboxSpec(base_dir=sb_base, endpoint=("127.0.0.1", port), max_connections=32)
    async with server, await Sandbox.create(spec) as sb:
        res = await sb.exec(["python3", "-c", HOLD_CONNECTIONS], timeout_s=60)
        assert sb.forwarder is not None
        assert (sb.forwarder.connections, sb.forwarder.refused) == (32, 8)
    assert res.stdout.split() == ["32", "8"], res.stderr
    assert peak == 32


FORK_BOMB = """
import os, signal, time
kids = []
for _ in range(200):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(30)
        os._exit(0)
    kids.append(pid)
print(len(kids))
for pid in kids:
    os.kill(pid, signal.SIGKILL)
"""


async def test_process_cap_holds_for_the_sandbox_as_a_whole(sb_base: Path) -> None:
    spec = SandboxSpec(base_dir=sb_base, max_processes=40)
    async with await Sandbox.create(spec) as sb:
        res = await sb.exec(["python3", "-c", FORK_BOMB], timeout_s=60)
        after = await sb.exec(["echo", "alive"])
    assert 20 < int(res.stdout) < 40, res.stdout + res.stderr  # the agent and python count too
    assert after.stdout == "alive\n"


@pytest.mark.skipif(cgroups.layout()[0] == "none", reason="no cgroups here")
async def test_the_agent_is_in_its_cgroup_when_create_returns(sb_base: Path) -> None:
    """The move into the cgroup overlaps the agent's start-up; create() still returns only after it,
    before anything can fork, in every hierarchy."""
    for _ in range(5):
        async with await Sandbox.create(SandboxSpec(base_dir=sb_base, max_processes=64)) as sb:
            assert sb.cgroup is not None
            per_folder = [(f / "cgroup.procs").read_text().split() for f in sb.cgroup.folders]
            assert all(len(p) == 1 for p in per_folder) and len({p[0] for p in per_folder}) == 1, per_folder


@pytest.mark.skipif(cgroups.layout()[0] == "none", reason="no cgroups here: memory is capped per process")
async def test_memory_cap_holds_for_the_sandbox_as_a_whole(sb_base: Path) -> None:
    spec = SandboxSpec(base_dir=sb_base, memory_mb=200)
    hog = "python3 -c 'import time; x = bytearray(90 << 20); x[::4096] = b\"x\" * len(x[::4096]); time.sleep(5)'"  # noqa: E501
    async with await Sandbox.create(spec) as sb:
        _, out, _ = await run_in(sb, f"for i in 1 2 3; do ({hog}; echo rc=$?) & done; wait", 60)
    assert "rc=137" in out, out  # three 90 MiB processes do not fit in 200 MiB together


@ROOT_ONLY
async def test_tmp_and_workspace_sit_on_a_size_limited_tmpfs(sb_base: Path) -> None:
    async with await Sandbox.create(SandboxSpec(base_dir=sb_base, disk_mb=16)) as sb:
        assert sb.tmpfs
        rc, _, err = await run_in(sb, "head -c 40000000 /dev/zero > /tmp/big")
        rc2, _, _ = await run_in(sb, "head -c 40000000 /dev/zero > /workspace/big")
    assert rc != 0 and "No space left on device" in err
    assert rc2 != 0


async def test_sparse_files_stay_sparse_when_copied_out(sb_base: Path, tmp_path: Path) -> None:
    sb = await Sandbox.create(SandboxSpec(base_dir=sb_base))
    await run_in(sb, "truncate -s 900M sparse.bin && printf end >> sparse.bin")
    report = await sb.destroy(keep_workspace=tmp_path / "final")
    out = tmp_path / "final" / "sparse.bin"
    assert out.stat().st_size == 900 * 2**20 + 3
    assert out.stat().st_blocks * 512 < 1 << 20
    assert report is not None and report.bytes < 1 << 20


def test_copy_untrusted_caps_data_and_skips_specials(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "a").write_bytes(b"x" * 5000)
    (src / "b").write_bytes(b"y" * 5000)
    os.mkfifo(src / "fifo")
    os.symlink("/etc/passwd", src / "abs")
    report = copy_untrusted(src, tmp_path / "dst", max_files=100, max_bytes=6000)
    assert report.truncated == "more than 6000 bytes of data"
    assert not (tmp_path / "dst" / "abs").exists() and not (tmp_path / "dst" / "fifo").exists()
    assert stat.S_ISREG(os.lstat(tmp_path / "dst" / "a").st_mode)


# ---- issue 19 item 6: uid leases are machine-wide; /proc/1/fd ------------------------------------


LEASE_HOLDER = """
import asyncio, os, sys
from harnessrl.sandbox import Sandbox, SandboxSpec, identity

async def main():
    if sys.argv[1] == "sandbox":  # a real sandbox in this process's own base folder
        async with await Sandbox.create(SandboxSpec()) as sb:
            print(sb.uid, flush=True)
            await asyncio.to_thread(sys.stdin.read)
    else:  # a lease that starts where the other process's did (pids equal mod 65536)
        lease = identity.lease_uid(start=int(sys.argv[2]) - identity.UID_BASE)
        print(lease.uid, flush=True)
        await asyncio.to_thread(sys.stdin.read)

asyncio.run(main())
"""


def _lease_holder(base: Path, *args: str) -> tuple[Any, int]:
    """A python process that leases a uid with `base` as its sandbox base folder; (it, the uid)."""
    import subprocess
    import sys

    env = {**os.environ, "HARNESSRL_SANDBOX_DIR": str(base), "PYTHONPATH": str(BUNDLED.parents[2])}
    proc = subprocess.Popen(
        [sys.executable, "-c", LEASE_HOLDER, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.strip().isdigit(), (line, proc.wait(60))
    return proc, int(line)


@ROOT_ONLY
def test_two_processes_with_different_base_folders_never_share_a_uid(sb_base: Path) -> None:
    """Leases were flocks under `<base>/hrl-uids`: two harnessrl processes with different
    $HARNESSRL_SANDBOX_DIR drew from one range, and two whose pids were equal mod 65536 started on
    the same uid, so their sandboxes shared RLIMIT_NPROC (one sandbox's fork bomb starved the other).
    The lock folder is now one per machine: a lease starting on a uid another process's sandbox
    holds gets another one; once that process is killed (SIGKILL: no clean-up) its uid is free."""
    from harnessrl.sandbox.folders import sweep_stale

    first, second = sb_base / "a", sb_base / "b"
    procs = []
    try:
        holder, uid = _lease_holder(first, "sandbox")
        procs.append(holder)
        assert uid >= identity.UID_BASE
        other, other_uid = _lease_holder(second, "lease", str(uid))
        procs.append(other)
        assert other_uid != uid
        holder.kill()
        holder.wait(60)
        again, again_uid = _lease_holder(second, "lease", str(uid))
        procs.append(again)
        assert again_uid == uid
    finally:
        for proc in procs:
            proc.kill()
            proc.wait(60)
        sweep_stale(first)
    assert identity.uid_lock_dir().parent in identity.LOCK_PARENTS
    st = os.lstat(identity.uid_lock_dir())
    assert (st.st_uid, stat.S_IMODE(st.st_mode)) == (0, 0o700)


PROC_ONE = (
    "ls /proc/self/fd > /dev/null && echo own-fd; "
    "for d in fd fdinfo map_files; do ls /proc/1/$d > /dev/null 2>&1 && echo LISTED-$d; done; "
    "for f in environ maps auxv syscall stack io; do cat /proc/1/$f > /dev/null 2>&1 && echo READ-$f; done; "
    "readlink /proc/1/exe /proc/1/cwd /proc/1/root > /dev/null 2>&1 && echo LINKS; echo end"
)


async def test_commands_cannot_list_the_agents_descriptors(sb_base: Path) -> None:
    """The agent is non-dumpable, so its descriptors' targets, environment and memory map are refused
    (a ptrace check); listing /proc/1/fd needs only the directory's permission, and the kernel gives
    a non-dumpable process's /proc entries to root of its user namespace. While everything ran as
    uid 0 inside, that was the commands' own uid, and a command listed the agent's descriptor numbers
    (which commands are running, how many descriptors the host passed). At uid 1000 inside
    (bwrap.INSIDE_UID) root of the namespace is unmapped: the listing is refused, for both agents."""
    async with await Sandbox.create(SandboxSpec(base_dir=sb_base)) as sb:
        _, out, _ = await run_in(sb, PROC_ONE)
    assert out.split() == ["own-fd", "end"]


# ---- 10. the checker's report, a shell entry's answer, the checker's writes (issue 19) ----------


FORKED_GRADE = """
import multiprocessing, sys

def work(workspace, queue):
    sys.path.append(workspace)
    import solution
    queue.put(solution.answer())

def grade(transcript, workspace_path):
    ctx = multiprocessing.get_context("fork")  # the usual way to give agent code a timeout
    queue = ctx.Queue()
    worker = ctx.Process(target=work, args=(workspace_path, queue))
    worker.start()
    worker.join(30)
    got = queue.get(timeout=5) if worker.exitcode == 0 else None
    return {"correct": float(got == 42)}
"""
# Agent code: on import, a grandchild keeps every report channel it holds, waits until the driver has
# written its report, and replaces it (truncate + write).
FORK_FORGER = """
import os, time
FORGED = b'{"mode": "grade", "value": {"correct": 1.0}, "children_confined": true}'

if os.fork() == 0:
    fds = []
    for fd in range(3, 64):
        try:
            if "hrl-result" in os.readlink(f"/proc/self/fd/{fd}"):
                fds.append(fd)
        except OSError:
            pass
    deadline = time.monotonic() + 60
    while fds and time.monotonic() < deadline:
        if os.fstat(fds[0]).st_size > 0:
            for fd in fds:
                try:
                    os.ftruncate(fd, 0)
                    os.pwrite(fd, FORGED, 0)
                except OSError:
                    pass
            break
    os._exit(0)

def answer():
    time.sleep(0.5)
    return 41  # wrong
"""


def test_a_forked_worker_cannot_forge_the_checkers_report(tmp_path: Path) -> None:
    """Issue 19.1: a checker whose grade() runs the agent's function in a forked multiprocessing
    worker handed agent code fd 3; a grandchild waited for the report and overwrote it: 1.0 for a
    wrong answer. Forks now close the channel, and the driver seals its report and checks it."""
    task = checker_task("fork", FORKED_GRADE, input_mount_dir=CLAWGYM_MOUNT)
    ws = workspace(tmp_path / "ws", {"solution.py": FORK_FORGER})
    result = run_checker(task, ws, runner=SandboxCommandRunner())
    assert (result.score, result.metrics, result.error) == (0.0, {"correct": 0.0}, None), result


# A non-canonical reward.sh that runs the workspace's tests with pytest (which imports the agent's
# conftest.py), then prints the minimum of the reward's own metrics.
PYTEST_SH = """#!/usr/bin/env bash
set -uo pipefail
cd /root/.openclaw/workspace
python3 -m pytest -q -p no:cacheprovider reward/test_out.py
python3 /root/.openclaw/workspace/reward/check.py /root/.openclaw/workspace \\
  | python3 -c 'import json, sys; d = json.load(sys.stdin); print(min(float(v) for v in d.values()))'
"""
TEST_OUT = "def test_out():\n    assert open('out.txt').read() == 'hi'\n"
CHECK_OUT = """
import json, sys
from pathlib import Path
ws = Path(sys.argv[1])
print(json.dumps({"right": float((ws / "out.txt").exists() and (ws / "out.txt").read_text() == "hi")}))
"""
# conftest.py planted by the agent: a daemon keeps bash's stdout (reopened through /proc, or any
# stream it inherited) and writes 1.0 once bash has exited.
LATE_WRITER = """
import os, stat, time
bash = os.getppid()
if os.fork() == 0:
    os.setsid()
    outs = []
    try:
        outs.append(os.open(f"/proc/{bash}/fd/1", os.O_WRONLY))
    except OSError:
        pass
    for fd in range(0, 64):
        try:
            if stat.S_ISFIFO(os.fstat(fd).st_mode) or stat.S_ISSOCK(os.fstat(fd).st_mode):
                outs.append(os.dup(fd))
        except OSError:
            pass
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            state = open(f"/proc/{bash}/stat").read().rsplit(")", 1)[1].split()[0]
        except OSError:
            state = "gone"
        if state in ("Z", "gone"):
            break
        time.sleep(0.001)
    for fd in outs:
        try:
            os.write(fd, b"1.0\\n")
        except OSError:
            pass
    time.sleep(2)
    os._exit(0)
"""


def test_a_daemon_cannot_write_a_shell_entrys_answer_after_it_exits(tmp_path: Path) -> None:
    """Issue 19.2: agent code that the entry's pytest loaded reopened /proc/<bash>/fd/1 and left a
    daemon that wrote 1.0 once bash was a zombie: reward 1.0 (control 0.0). Bash's stdout is a
    socket now (no reopening through /proc), only what arrived before bash exited counts, and a
    program still running when it exited fails the run."""
    d = tmp_path / "split" / "task_p"
    (d / "input_files").mkdir(parents=True)
    (d / "reward").mkdir()
    (d / "data_entry.json").write_text(json.dumps({"task_id": "task_p", "user_query": "q", "metadata": {}}))
    (d / "input_files" / "README.md").write_text("task\n")
    (d / "reward" / "check.py").write_text(CHECK_OUT)
    (d / "reward" / "test_out.py").write_text(TEST_OUT)
    (d / "reward" / "reward.sh").write_text(PYTEST_SH)
    [task] = load_tasks(tmp_path / "split").tasks
    assert task.checker is not None and task.checker.shell_entry == "reward/reward.sh"
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "out.txt").write_text("ho")  # wrong
    control = run_checker(task, ws, runner=SandboxCommandRunner())
    assert (control.score, control.error) == (0.0, None), control
    (ws / "conftest.py").write_text(LATE_WRITER)
    attacked = run_checker(task, ws, runner=SandboxCommandRunner())
    assert attacked.score == 0.0, attacked
    assert attacked.error is not None and "still running when it exited" in attacked.error, attacked


HOARDER = """
import os
try:
    with open("big", "wb") as fh:
        for _ in range(300):
            fh.write(b"x" * 2**20)
except OSError:
    pass
n = 0
try:
    for i in range(150_000):
        open(f"f{i}", "w").close()
        n += 1
except OSError:
    pass
print(n, os.path.getsize("big") // 2**20)
"""
RUNS_HOARDER = """
import subprocess, sys
def grade(transcript, workspace_path):
    done = subprocess.run([sys.executable, "-I", "hoard.py"], cwd=workspace_path, capture_output=True)
    files, mib = done.stdout.split()
    return {"files": float(files), "mib": float(mib)}
"""


@ROOT_ONLY
def test_what_the_checker_writes_stays_in_its_bounded_sandbox(
    tmp_path: Path, sb_base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 19.4: code the checker ran made 150,000 files (the workspace cap is 100,000) and 300 MiB
    in the host's workspace, through a read-write bind, and they stayed. The checker now sees a copy
    on its sandbox's size- and inode-limited tmpfs: the files stop at the cap and nothing stays."""
    task = checker_task("hoard", RUNS_HOARDER, input_mount_dir=CLAWGYM_MOUNT)
    ws = workspace(tmp_path / "ws", {"hoard.py": HOARDER})
    monkeypatch.setenv("HARNESSRL_SANDBOX_DIR", str(sb_base))
    result = run_checker(task, ws, runner=SandboxCommandRunner(), timeout_s=300)
    assert result.error is None, result
    assert result.metrics["files"] < 100_000  # the tmpfs's inode cap (home, /tmp and the copy share it)
    assert result.metrics["mib"] == 300.0  # under the 2 GiB size cap, in the sandbox's memory
    assert sorted(p.name for p in ws.iterdir()) == ["hoard.py"]  # the host's workspace is untouched
    assert list(sb_base.glob("hrl-sb-*")) == []  # the sandbox's folder (and its tmpfs) went with it


# ---- 8. failures the policy causes are never infrastructure faults (issue 19, item 3) ---------------


HIJACK_STDOUT = """cat > /tmp/hijack.py <<'PY'
import os
bomb = b" " * 262144 + b"\\n" + b'{"a": ' + b"[" * 100000 + b"]" * 100000 + b"}\\n"
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        link = os.readlink(f"/proc/{pid}/fd/1")
    except OSError:
        continue
    if link.startswith("/memfd:hrl-") and "-out" in link:  # the harness's own stdout
        with open(f"/proc/{pid}/fd/1", "ab") as out:
            out.write(bomb)
        print("wrote into", pid, link)
PY
python3 /tmp/hijack.py"""


async def test_a_command_that_corrupts_the_harness_output_is_the_policys_failure(tmp_path: Path) -> None:
    """Inside a real whitebox:00000 rollout, one bash command found the harness process (its fd 1 is
    `/memfd:hrl-N-out`), reopened `/proc/<pid>/fd/1` for appending and wrote 256 KiB of spaces and a
    line of JSON nested 100,000 deep: the adapter's parse raised RecursionError, the rollout ended
    "internal error" of the infrastructure and was dropped, never pushed down (and a policy that had
    solved the task kept it from being scored at all). Now reading what the harness produced fails
    as the policy's harness_error, reward 0, trained; the control rollout solves the task (1.0)."""
    from harnessrl.chat.format import ChatFormat
    from harnessrl.config import Config
    from harnessrl.engines.models import load_tokenizer
    from harnessrl.engines.scripted import Script, ScriptedEngine
    from harnessrl.rollout.session import RolloutStack, reference_command
    from harnessrl.train.batch import collect_trees
    from harnessrl.types import ChatMessage, ToolCall

    warmup = next(t for t in load_tasks("bundled", split="train").tasks if t.id == "task_0000")
    attack = warmup.model_copy(update={"id": "hijack", "prompt": warmup.prompt + " (hijack)"})
    solve = reference_command(warmup)

    def bash(command: str) -> ChatMessage:
        return ChatMessage(
            role="assistant", tool_calls=[ToolCall(name="bash", arguments={"command": command})]
        )

    engine = ScriptedEngine(
        ChatFormat(load_tokenizer("tiny-qwen3")),
        [
            Script(turns=[bash(f"{solve}; {HIJACK_STDOUT}"), "done"], match=attack.prompt),
            Script(turns=[bash(solve), "done"], match=warmup.prompt),
        ],
    )
    cfg = Config()
    cfg.engine.type, cfg.engine.model = "scripted", "tiny-qwen3"
    cfg.rollout.out_dir, cfg.rollout.timeout_s = str(tmp_path), 120
    async with RolloutStack.from_config(cfg, [warmup, attack], engine=engine) as stack:
        assert stack.runner is not None
        jobs = [
            RolloutJob(attack, "whitebox:00000", "hijack"),
            RolloutJob(warmup, "whitebox:00000", "control"),
        ]
        hijack, control = await stack.runner.run_many(jobs)
    assert (control.status, control.reward) == (RolloutStatus.OK, 1.0), control.status_reason
    assert (hijack.status, hijack.fault, hijack.reward) == (RolloutStatus.HARNESS_ERROR, "policy", 0.0)
    assert hijack.status_reason.startswith(
        "reading the harness's output failed: HarnessError: the harness's output holds JSON that cannot "
        "be read: line nests deeper than 256 levels"  # the one untrusted-JSON decoder's refusal
    ), hijack.status_reason
    assert "code" not in hijack.reward_detail  # never scored: its output could not be read
    assert (Path(hijack.workdir) / "workspace" / "hello.txt").read_text() == "Hello, harness!\n"
    batch = collect_trees([hijack], Config())
    assert [(s.rollout_id, s.reward) for s in batch.samples] == [("hijack", 0.0)]
    assert batch.failures_trained == {"harness_error": 1}


# ---- 9. the judge's evidence is read off the loop, once, bounded (issue 19, item 5) -----------------


MANY_FILES = (
    "python3 -c 'import os\nfor i in range(95000):"
    ' os.close(os.open("f%05d" % i, os.O_CREAT | os.O_WRONLY))\''
)


@pytest.mark.parametrize("sandbox_agent", ["python"], indirect=True)  # host-side work: one agent is enough
async def test_95000_files_for_the_judge_never_stall_the_loop(tmp_path: Path, sandbox_agent: str) -> None:
    """A PinchBench-style task (rubric rules without `file_path`, so the judge is shown a digest of
    the workspace): the agent leaves 95,000 empty files. The digest (rglob, sort, is_file, reads) was
    made once per rule, synchronously inside the coroutine that scores it, and stalled the event loop
    that serves every rollout's model calls for 13.5 s. A ticker coroutine measures the loop's worst
    stall over the whole rollout: under 1 s; the judge got one digest, bounded to 200 files. (Host-side
    file work, ~50 s under load: run with one of the two sandbox agents.)"""
    from test_verify_judge import serve_judge

    from harnessrl.config import JudgeConfig
    from harnessrl.types import RubricRule
    from harnessrl.verify import RubricJudge

    levels = {"0": "no", "0.5": "partly", "1": "yes"}
    rules = [
        RubricRule(name=n, description=f"check {n}", scores=levels) for n in ("good", "digest", "fenced")
    ]
    task = Task(id="judged", prompt="p", grading_type="llm_judge", rubric=rules)
    worst, stop = 0.0, asyncio.Event()

    async def ticker() -> None:
        nonlocal worst
        last = asyncio.get_running_loop().time()
        while not stop.is_set():
            await asyncio.sleep(0.005)
            now = asyncio.get_running_loop().time()
            worst, last = max(worst, now - last), now

    with serve_judge() as (fake, url):
        judge = RubricJudge(JudgeConfig(base_url=url, model="judge-x", max_retries=0))
        async with ProxyServer(scripted_deps(["hi"]), port=0) as server:
            settings = RunnerSettings(
                out_dir=tmp_path / "runs", timeout_s=120, sandbox=SandboxConfig(pool_size=0)
            )
            endpoint = ("127.0.0.1", server.port)
            async with RolloutRunner(server.deps.sessions, endpoint, settings, judge=judge) as run:
                tick = asyncio.create_task(ticker())
                try:
                    rollout = await run.run(
                        RolloutJob(task, "shell", "many", options={"command": MANY_FILES})
                    )
                finally:
                    stop.set()
                    await tick
                    await judge.aclose()
    assert rollout.status is RolloutStatus.OK, rollout.status_reason
    assert rollout.reward == (1.0 + 1.0 + 0.5) / 3, rollout.timings
    assert worst < 1.0, f"the event loop stalled {worst:.2f} s"
    shown = {b["messages"][1]["content"].split("Evidence:\n", 1)[1] for b in fake.requests}
    assert len(shown) == 1  # one digest for every rule
    listed = [line for line in shown.pop().splitlines() if line.startswith("- ")]
    assert listed[:2] == ["- f00000", "- f00001"] and len(listed) == 201
