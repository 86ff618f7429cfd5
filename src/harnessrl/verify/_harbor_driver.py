"""Harbor verifier driver: runs inside the verifier's own sandbox, never imported by harnessrl.

    python3 -I -B harbor_driver.py TEST_SH WORKDIR LOGS_DIR RESULT_FD ENV_JSON

Runs `bash TEST_SH` with WORKDIR as cwd and ENV_JSON (the task's `[verifier] env`) added to its
environment only (never this process's: an `LD_PRELOAD` naming a library the agent left would load
into the driver), stdin closed, stdout and stderr captured through a socket
(its last `MAX_STDOUT` bytes kept for the logs), as Harbor runs a task's `tests/test.sh`. LOGS_DIR
(`/logs/verifier`, a tmpfs of the sandbox's own) is opened before bash starts and the reward files
are read through that descriptor, so renaming folders does not change what is read. When bash exits,
every other process of the sandbox is killed and gone before anything is read (`driver._end_entry`,
then waiting for the survivors): nothing the tests started can write a reward once this reads it.
Then `reward.json` and `reward.txt` are each opened with O_NOFOLLOW | O_NONBLOCK (a link or a FIFO
neither follows nor blocks) and taken only as a regular file of at most `MAX_REWARD_BYTES` bytes of
UTF-8; what they hold is parsed by the host (`verify/harbor.py`), not here.

The report, {"mode": "harbor", "test_status", "left_running", "reward_json", "reward_txt",
"problems": {file: why}, "stdout"} (or {"mode": "harbor", "error": ...} when bash could not be
started), goes once through RESULT_FD exactly as `driver.py` delivers its own: the channel is made
non-inheritable and closed in every fork, this process non-dumpable, the report written, sealed and
read back (a tampered channel exits `driver.TAMPERED`). `driver.py` is beside this file; stdlib only.
"""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
import threading
import time
import traceback
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import driver  # the checker driver beside this file: its channel and process handling

MAX_REWARD_BYTES = 64 * 1024
REWARD_FILES = ("reward.json", "reward.txt")
SURVIVOR_WAIT_S = 5.0


def _read_reward(logs_fd: int, name: str) -> tuple[str | None, str | None]:
    """(text, None), (None, why it is not taken), or (None, None) when there is no such file."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=logs_fd)
    except FileNotFoundError:
        return None, None
    except OSError as e:
        return None, f"cannot be opened ({os.strerror(e.errno) if e.errno else e})"
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None, "not a regular file"
        data = b""
        while len(data) <= MAX_REWARD_BYTES:
            chunk = os.read(fd, MAX_REWARD_BYTES + 1 - len(data))
            if not chunk:
                break
            data += chunk
    except OSError as e:
        return None, f"cannot be read ({os.strerror(e.errno) if e.errno else e})"
    finally:
        os.close(fd)
    if len(data) > MAX_REWARD_BYTES:
        return None, f"over {MAX_REWARD_BYTES} bytes"
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError:
        return None, "not UTF-8"


def _run_tests(test_sh: str, workdir: str, env: dict[str, str]) -> tuple[int, int, str]:
    """Run bash on the tests -> (its pid, its exit status, the tail of what it printed)."""
    host, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        proc = subprocess.Popen(
            ["bash", test_sh],
            cwd=workdir,
            env={**os.environ, **env},
            stdin=subprocess.DEVNULL,
            stdout=child.fileno(),
            stderr=child.fileno(),
            start_new_session=True,
        )
    finally:
        child.close()
    tail = bytearray()
    reader = threading.Thread(target=driver._read_into, args=(host, tail), daemon=True)
    reader.start()
    with host:
        proc.wait()
        host.shutdown(socket.SHUT_RD)
        reader.join()
    return proc.pid, proc.returncode, tail.decode("utf-8", errors="replace")


def _stop_everything(pid: int) -> int:
    """Kill every process but this one and the sandbox's pid 1; wait until they are gone. -> how many
    were still running; -1 when some would not die in time."""
    left = driver._end_entry(pid, True)
    deadline = time.monotonic() + SURVIVOR_WAIT_S
    while driver._survivors(os.getpid()):
        if time.monotonic() > deadline:
            return -1
        driver._end_entry(pid, True)
        time.sleep(0.01)
    return left


def _verify(test_sh: str, workdir: str, logs_fd: int, env: dict[str, str]) -> dict[str, Any]:
    try:
        pid, status, out = _run_tests(test_sh, workdir, env)
    except BaseException:
        return {"mode": "harbor", "error": traceback.format_exc()[-2000:]}
    left = _stop_everything(pid)
    report: dict[str, Any] = {"mode": "harbor", "test_status": status, "left_running": left, "stdout": out}
    if left < 0:
        report["problems"] = {"tests": "programs the tests started could not be stopped"}
        return report
    problems: dict[str, str] = {}
    for name in REWARD_FILES:
        text, why = _read_reward(logs_fd, name)
        report["reward_" + name.split(".")[1]] = text
        if why is not None:
            problems[name] = why
    report["problems"] = problems
    return report


def main() -> None:
    test_sh, workdir, logs, result_fd = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    os.set_inheritable(result_fd, False)
    os.register_at_fork(after_in_child=lambda: driver._close_in_child(result_fd))
    driver._non_dumpable()
    env = driver.json.loads(sys.argv[5])
    logs_fd = os.open(logs, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    report = _verify(test_sh, workdir, logs_fd, env)
    data = driver.json.dumps(report).encode()
    if not driver._deliver(result_fd, data):
        sys.stderr.write("harnessrl harbor driver: the report channel was tampered with\n")
        os._exit(driver.TAMPERED)
    sys.stdout.write(report.get("stdout", ""))  # for the logs only
    sys.stdout.flush()


if __name__ == "__main__":
    main()
