"""The in-sandbox agent: runs commands for the host and bridges the model endpoint. Stdlib only.

Two implementations of one program: this file, and `agent.c` (the same protocol and behaviour,
compiled once per machine by `folders.native_agent`; used when a C compiler is there, because it
starts ~12 ms faster than any python). This one runs wherever there is a python.

This file is executed *inside* the sandbox by the system python (`python3 -I -S agent.py ...`), so it
imports nothing from harnessrl and only C modules: `_socket` and `_signal` rather than `socket` and
`signal` (those pull in enum, functools and collections), no asyncio, subprocess, json or threading.
Interpreter start-up is most of a sandbox's creation cost; these imports cut it by more than half.

    agent.py LISTEN_PORT SOCK_PATH REAP_ALL FD_SOCKET    (FD_SOCKET: a unix socket the host sends fds on)

- The agent is pid 1 of the sandbox's pid namespace (bwrap --as-pid-1): signals from commands do not
  reach it, and it reaps every orphan. It makes itself non-dumpable first, so commands (same uid)
  cannot open its pipes through /proc/1/fd or ptrace it: the control channel cannot be forged.
- Control: frames on stdin/stdout, each a 4-byte big-endian length + a payload. Host to agent
  (trusted): NUL-separated fields (`protocol.encode_request`, parsed by `parse_request`): id, argv,
  env, cwd, timeout_s, grace_s, rlimits, nfds. Agent to host: a small JSON object written by
  `reply()`, which the host parses as untrusted, with a size cap. The agent first writes
  {"ready", "pid", "dumpable"}. A request comes with `nfds` descriptors on FD_SOCKET (SCM_RIGHTS),
  opened by the host: the command's stdout, stderr, then any extra ones it gets as fds 3, 4, ... .
  The command runs in its own session (= its own process group); the reply {"id", "rc",
  "timed_out", "error"} comes when it has exited. rc < 0 is the killing signal, as in subprocess.
  On timeout the group gets SIGTERM, then SIGKILL after grace_s. The host reads the output from its
  own descriptors: nothing in the sandbox names a path that the host opens.
- After each command, if REAP_ALL is 1 (we are alone in a pid namespace), every other process in the
  namespace is SIGKILLed and reaped before the reply, so daemonised children do not outlive the
  command that started them.
- Bridge: when LISTEN_PORT > 0, a TCP listener on 127.0.0.1:LISTEN_PORT whose connections are piped to
  the unix socket SOCK_PATH (served on the host by `forward.UnixToTcpForwarder`). This is the only
  way out of a sandbox without a network.
- stdin EOF (the host went away) kills the running command and ends the agent.
"""

import _signal as signal
import _socket as socket
import fcntl
import os
import resource
import select
import sys
import time

BUF_LIMIT = 1 << 18
REAP_WAIT_S = 2.0
PR_SET_DUMPABLE = 4


def non_dumpable() -> bool:
    """prctl(PR_SET_DUMPABLE, 0) through _ctypes alone (the ctypes package costs ~5 ms to import)."""
    try:
        import _ctypes

        class CInt(_ctypes._SimpleCData):
            _type_ = "i"

        class Fn(_ctypes.CFuncPtr):
            _flags_ = _ctypes.FUNCFLAG_CDECL
            _restype_ = CInt

        class Libc:
            _handle = _ctypes.dlopen(None)  # type: ignore[arg-type]

        return Fn(("prctl", Libc))(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0  # type: ignore[arg-type]
    except Exception:
        return False


def parse_request(payload: bytes) -> dict:
    """The fields of `protocol.encode_request` (the host is trusted: a malformed frame just raises)."""
    f = [os.fsdecode(x) for x in payload.split(b"\0")[:-1]]
    if f[0] != "exec":
        raise ValueError(f"unknown op {f[0]!r}")
    argc = int(f[6])
    i = 7 + argc
    envc = int(f[i])
    env = dict(e.split("=", 1) for e in f[i + 1 : i + 1 + envc])
    i += 1 + envc
    nrl = int(f[i])
    limits = [(int(f[i + 1 + 2 * k]), int(f[i + 2 + 2 * k])) for k in range(nrl)]
    return {"id": int(f[1]), "cwd": f[2], "timeout_s": float(f[3]) if f[3] else None,
            "grace_s": float(f[4]), "nfds": int(f[5]), "argv": f[7 : 7 + argc], "env": env,
            "rlimits": limits}  # fmt: skip


def _json_str(s: str) -> str:
    return '"' + "".join(c if " " <= c < "\x7f" and c not in '"\\' else "?" for c in s[:4000]) + '"'


def reply(obj: dict) -> None:
    """One frame of flat JSON (str, int, bool, None values) to the host. No json module: it imports re."""
    parts = []
    for key, v in obj.items():
        if v is None:
            text = "null"
        elif v is True or v is False:
            text = "true" if v else "false"
        elif isinstance(v, int):
            text = str(v)
        else:
            text = _json_str(str(v))
        parts.append(_json_str(key) + ":" + text)
    data = ("{" + ",".join(parts) + "}").encode()
    os.write(1, len(data).to_bytes(4, "big") + data)


class Pipe:
    """One bridged connection: two sockets and a pending buffer for each direction."""

    def __init__(self, a: socket.socket, b: socket.socket) -> None:
        self.socks = (a, b)
        self.bufs = [bytearray(), bytearray()]  # bufs[i]: bytes waiting to be written to socks[i]
        self.eof = [False, False]  # eof[i]: socks[i] has sent EOF
        self.shut = [False, False]  # shut[i]: write side of socks[i] is shut down
        for s in self.socks:
            s.setblocking(False)

    def done(self) -> bool:
        return all(self.shut)

    def close(self) -> None:
        for s in self.socks:
            s.close()


class Agent:
    def __init__(self, port: int, sock_path: str, reap_all: bool, fd_socket: int) -> None:
        self.sock_path = sock_path
        self.reap_all = reap_all
        os.set_inheritable(fd_socket, False)
        self.fd_sock = socket.socket(fileno=fd_socket)
        self.listener: socket.socket | None = None
        if port > 0:
            self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self.listener.bind(("127.0.0.1", port))
            self.listener.listen(128)
            self.listener.setblocking(False)
        self.pipes: list[Pipe] = []
        self.inbuf = bytearray()
        self.stdin_open = True
        self.child: dict | None = None  # pid, pidfd, id, deadline, term_at, timed_out

    # ---- control -------------------------------------------------------------------------------
    def on_stdin(self) -> None:
        data = os.read(0, 65536)
        if not data:
            self.stdin_open = False
            return
        self.inbuf += data
        while len(self.inbuf) >= 4:
            n = int.from_bytes(self.inbuf[:4], "big")
            if len(self.inbuf) < 4 + n:
                break
            req = parse_request(bytes(self.inbuf[4 : 4 + n]))
            del self.inbuf[: 4 + n]
            self.start(req)

    def receive_fds(self, n: int) -> list:
        """The `n` descriptors the host sent with the request (stdout, stderr, extras)."""
        _, anc, _, _ = self.fd_sock.recvmsg(64, socket.CMSG_LEN(4 * n), socket.MSG_CMSG_CLOEXEC)
        fds = []
        for level, kind, data in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds += [int.from_bytes(data[i : i + 4], sys.byteorder) for i in range(0, len(data) - 3, 4)]
        return fds

    def start(self, req: dict) -> None:
        fds = self.receive_fds(req.get("nfds", 2))
        if self.child is not None or len(fds) < 2:
            for fd in fds:
                os.close(fd)
            error = "busy" if self.child is not None else "output descriptors missing"
            reply({"id": req["id"], "rc": -1, "timed_out": False, "error": error})
            return
        r, w = os.pipe2(os.O_CLOEXEC)
        pid = os.fork()
        if pid == 0:  # child: never returns
            os.close(r)
            self.exec_child(req, fds, w)
        os.close(w)
        for fd in fds:
            os.close(fd)
        err = os.read(r, 4096).decode(errors="replace")
        os.close(r)
        if err:
            os.waitpid(pid, 0)
            reply({"id": req["id"], "rc": 127, "timed_out": False, "error": err})
            return
        timeout = req.get("timeout_s")
        deadline = time.monotonic() + timeout if timeout else None
        pidfd = os.pidfd_open(pid)
        self.child = {"pid": pid, "pidfd": pidfd, "id": req["id"], "deadline": deadline,
                      "grace": req.get("grace_s", 2.0), "killed_at": None, "timed_out": False}  # fmt: skip

    def exec_child(self, req: dict, fds: list, errw: int) -> None:
        try:
            os.setsid()
            for number, value in req["rlimits"]:
                resource.setrlimit(number, (value, value))
            sources = [os.open("/dev/null", os.O_RDONLY | os.O_CLOEXEC), *fds]
            high = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 64) for fd in sources]
            for target, fd in enumerate(high):  # stdin, stdout, stderr, then the extras as 3, 4, ...
                os.dup2(fd, target)
            os.chdir(req["cwd"])
            for sig in (signal.SIGPIPE, signal.SIGTERM, signal.SIGINT):
                signal.signal(sig, signal.SIG_DFL)
            os.execvpe(req["argv"][0], req["argv"], req["env"])
        except BaseException as e:  # report to the parent through the CLOEXEC pipe
            os.write(errw, f"{type(e).__name__}: {e}".encode())
        os._exit(127)

    def tick_child(self, now: float) -> None:
        c = self.child
        if c is None:
            return
        if c["deadline"] is not None and now >= c["deadline"] and c["killed_at"] is None:
            c["timed_out"] = True
            c["killed_at"] = now
            self.signal_group(c["pid"], signal.SIGTERM)
        elif c["killed_at"] is not None and now >= c["killed_at"] + c["grace"]:
            self.signal_group(c["pid"], signal.SIGKILL)
            c["killed_at"] = float("inf")

    def reap(self) -> None:
        """As pid 1, wait for every exited process; the command's own status ends its request."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if self.child is not None and pid == self.child["pid"]:
                self.on_child_exit(status)

    def on_child_exit(self, status: int) -> None:
        c = self.child
        assert c is not None
        os.close(c["pidfd"])
        self.signal_group(c["pid"], signal.SIGKILL)  # anything left in its group
        if self.reap_all:
            self.kill_others()
        rc = os.waitstatus_to_exitcode(status)
        self.child = None
        reply({"id": c["id"], "rc": rc, "timed_out": c["timed_out"], "error": ""})

    @staticmethod
    def signal_group(pgid: int, sig: int) -> None:
        try:
            os.killpg(pgid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    @staticmethod
    def kill_others() -> None:
        """SIGKILL every other process of the namespace in one call, then reap them (at most
        REAP_WAIT_S), so none still runs when the reply goes out. kill(-1) spares only the caller
        (pid 1) and signals the others under the lock fork takes: a chain of forks cannot slip past
        it as it could past a /proc listing. Only as pid 1 of a namespace: elsewhere kill(-1) would
        reach every process of the uid."""
        if os.getpid() != 1:
            return
        try:
            os.kill(-1, signal.SIGKILL)
        except ProcessLookupError:  # nobody else
            return
        deadline = time.monotonic() + REAP_WAIT_S
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:  # nobody left
                return
            if pid == 0:
                if time.monotonic() > deadline:
                    return
                time.sleep(0.0005)

    # ---- bridge --------------------------------------------------------------------------------
    def on_accept(self) -> None:
        assert self.listener is not None
        try:
            fd, _ = self.listener._accept()  # type: ignore[attr-defined]
        except BlockingIOError:
            return
        conn = socket.socket(fileno=fd)
        up = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            up.connect(self.sock_path)
        except OSError:
            up.close()
            conn.close()
            return
        self.pipes.append(Pipe(conn, up))

    def pump(self, p: Pipe, readable: set, writable: set) -> None:
        for i in (0, 1):
            src, j = p.socks[i], 1 - i
            if src in readable and not p.eof[i]:
                try:
                    data = src.recv(65536)
                except (BlockingIOError, InterruptedError):
                    data = None
                except OSError:
                    data = b""
                if data == b"":
                    p.eof[i] = True
                elif data:
                    p.bufs[j] += data
        for j in (0, 1):
            dst = p.socks[j]
            if p.bufs[j] and dst in writable:
                try:
                    sent = dst.send(p.bufs[j])
                    del p.bufs[j][:sent]
                except (BlockingIOError, InterruptedError):
                    pass
                except OSError:
                    p.bufs[j].clear()
                    p.eof = [True, True]
            if p.eof[1 - j] and not p.bufs[j] and not p.shut[j]:
                p.shut[j] = True
                try:
                    dst.shutdown(socket.SHUT_WR)
                except OSError:
                    pass

    # ---- loop ----------------------------------------------------------------------------------
    def run(self, dumpable: bool) -> None:
        reply({"ready": True, "pid": os.getpid(), "dumpable": dumpable})
        while self.stdin_open or self.child is not None:
            rlist: list = [0] if self.stdin_open else []
            wlist: list = []
            if self.listener is not None:
                rlist.append(self.listener)
            if self.child is not None:
                rlist.append(self.child["pidfd"])
            for p in self.pipes:
                for i in (0, 1):
                    if not p.eof[i] and len(p.bufs[1 - i]) < BUF_LIMIT:
                        rlist.append(p.socks[i])
                    if p.bufs[i]:
                        wlist.append(p.socks[i])
            r, w, _ = select.select(rlist, wlist, [], 0.05)
            rs, ws = set(r), set(w)
            if 0 in rs:
                self.on_stdin()
                if not self.stdin_open and self.child is not None:
                    self.signal_group(self.child["pid"], signal.SIGKILL)
            if self.listener is not None and self.listener in rs:
                self.on_accept()
            for p in self.pipes:
                self.pump(p, rs, ws)
            for p in [p for p in self.pipes if p.done()]:
                p.close()
                self.pipes.remove(p)
            self.reap()
            self.tick_child(time.monotonic())


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    dumpable = not non_dumpable()
    Agent(int(sys.argv[1]), sys.argv[2], sys.argv[3] == "1", int(sys.argv[4])).run(dumpable)
