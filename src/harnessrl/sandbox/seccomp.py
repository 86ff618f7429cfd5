"""The seccomp filter every bubblewrap sandbox runs under: system calls an agent never needs fail.

A classic-BPF program (bwrap `--seccomp FD` reads it raw) in the Docker/Flatpak style: a deny list,
not an allow list, because harnesses are large programs (node, a Rust binary, python, compilers)
whose exact system calls we do not control. Denied with EPERM: kernel and mount administration,
module loading, kexec, ptrace and cross-process memory access, new namespaces (`unshare`, `setns`,
`clone` with any CLONE_NEW* flag: no nested user namespace to regain capabilities in), keyrings,
bpf, perf events, userfaultfd, handle-based opens, terminal injection (`TIOCSTI`/`TIOCLINUX`), and
`prlimit64` setting another process's limits (commands share the agent's uid, so one could set the
agent's RLIMIT_CPU and have the kernel kill the sandbox's pid 1; its own limits and reading any
process's stay allowed).
`clone3` and io_uring get ENOSYS: their arguments cannot be inspected by classic BPF, and glibc and
libuv fall back to `clone` and plain syscalls on ENOSYS. A foreign architecture (x32 calls on
x86-64, a 32-bit binary) is refused outright.

Only x86-64 is built here; on other machines `filter_program()` returns None and the sandbox runs
without a filter (its other layers still hold: an unprivileged uid, no capabilities, namespaces).
"""

from __future__ import annotations

import errno
import os
import platform
import struct
from pathlib import Path

# x86-64 system call numbers (arch/x86/entry/syscalls/syscall_64.tbl).
DENY_EPERM_X86_64 = {
    "ptrace": 101,
    "syslog": 103,
    "vhangup": 153,
    "pivot_root": 155,
    "acct": 163,
    "mount": 165,
    "umount2": 166,
    "swapon": 167,
    "swapoff": 168,
    "reboot": 169,
    "sethostname": 170,
    "setdomainname": 171,
    "iopl": 172,
    "ioperm": 173,
    "init_module": 175,
    "delete_module": 176,
    "quotactl": 179,
    "lookup_dcookie": 212,
    "kexec_load": 246,
    "add_key": 248,
    "request_key": 249,
    "keyctl": 250,
    "unshare": 272,
    "perf_event_open": 298,
    "fanotify_init": 300,
    "name_to_handle_at": 303,
    "open_by_handle_at": 304,
    "setns": 308,
    "process_vm_readv": 310,
    "process_vm_writev": 311,
    "finit_module": 313,
    "kexec_file_load": 320,
    "bpf": 321,
    "userfaultfd": 323,
    "open_tree": 428,
    "move_mount": 429,
    "fsopen": 430,
    "fsconfig": 431,
    "fsmount": 432,
    "fspick": 433,
    "mount_setattr": 442,
}
DENY_ENOSYS_X86_64 = {"io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427, "clone3": 435}
CLONE_X86_64 = 56
IOCTL_X86_64 = 16
PRLIMIT64_X86_64 = 302
CLONE_NEW_FLAGS = 0x7E020080
"""CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET | NEWTIME."""
TTY_INJECTION = (0x5412, 0x541C)
"""TIOCSTI (push bytes into a terminal's input) and TIOCLINUX."""
AUDIT_ARCH_X86_64 = 0xC000003E
X32_SYSCALL_BIT = 0x40000000

# classic BPF opcodes
LD_W_ABS = 0x20
JEQ_K = 0x15
JGE_K = 0x35
JSET_K = 0x45
RET_K = 0x06
RET_ALLOW = 0x7FFF0000
RET_KILL_PROCESS = 0x80000000
# offsets into struct seccomp_data: nr, arch, instruction_pointer, args[6] (little-endian u64s)
OFF_NR, OFF_ARCH, OFF_ARG0, OFF_ARG1, OFF_ARG2 = 0, 4, 16, 24, 32


def _ret_errno(code: int) -> int:
    return 0x00050000 | code


def _insn(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("<HBBI", code, jt, jf, k)


def _x86_64_program() -> bytes:
    """The filter as raw `struct sock_filter` entries. Layout: arch check, load nr, x32 check, then
    one JEQ per denied call jumping to its return, then prlimit64/clone/ioctl argument checks, then
    allow."""
    eperm, enosys = _ret_errno(errno.EPERM), _ret_errno(errno.ENOSYS)
    out = [
        _insn(LD_W_ABS, OFF_ARCH),
        _insn(JEQ_K, AUDIT_ARCH_X86_64, jt=1, jf=0),
        _insn(RET_K, RET_KILL_PROCESS),
        _insn(LD_W_ABS, OFF_NR),
        _insn(JGE_K, X32_SYSCALL_BIT, jt=0, jf=1),
        _insn(RET_K, eperm),
    ]
    for nr in sorted(DENY_EPERM_X86_64.values()):
        out += [_insn(JEQ_K, nr, jt=0, jf=1), _insn(RET_K, eperm)]
    for nr in sorted(DENY_ENOSYS_X86_64.values()):
        out += [_insn(JEQ_K, nr, jt=0, jf=1), _insn(RET_K, enosys)]
    # prlimit64(pid, resource, new, old): refuse a new limit (new != NULL) for another process
    # (pid != 0; pid_t is the low word of arg0; the pointer is both words of arg2).
    out += [
        _insn(JEQ_K, PRLIMIT64_X86_64, jt=0, jf=8),  # not prlimit64: on to the clone check
        _insn(LD_W_ABS, OFF_ARG0),
        _insn(JEQ_K, 0, jt=5, jf=0),  # this process: allow
        _insn(LD_W_ABS, OFF_ARG2),
        _insn(JEQ_K, 0, jt=0, jf=2),  # a new limit: refuse
        _insn(LD_W_ABS, OFF_ARG2 + 4),
        _insn(JEQ_K, 0, jt=1, jf=0),  # NULL: only reading: allow
        _insn(RET_K, eperm),
        _insn(RET_K, RET_ALLOW),
    ]
    # clone(flags, ...): refuse any namespace flag (flags are the low word of arg0).
    out += [
        _insn(JEQ_K, CLONE_X86_64, jt=0, jf=4),
        _insn(LD_W_ABS, OFF_ARG0),
        _insn(JSET_K, CLONE_NEW_FLAGS, jt=0, jf=1),
        _insn(RET_K, eperm),
        _insn(RET_K, RET_ALLOW),
    ]
    # ioctl(fd, request, ...): refuse terminal input injection (request is the low word of arg1).
    out += [_insn(JEQ_K, IOCTL_X86_64, jt=0, jf=2 + 2 * len(TTY_INJECTION)), _insn(LD_W_ABS, OFF_ARG1)]
    for request in TTY_INJECTION:
        out += [_insn(JEQ_K, request, jt=0, jf=1), _insn(RET_K, eperm)]
    out += [_insn(RET_K, RET_ALLOW), _insn(RET_K, RET_ALLOW)]
    return b"".join(out)


def filter_program(machine: str | None = None) -> bytes | None:
    """The raw BPF program for `machine` (default: this one's architecture), or None where none is built."""
    if (machine or platform.machine()) in ("x86_64", "AMD64"):
        return _x86_64_program()
    return None


ACTIONS = ("allow", "errno", "kill_process")
"""The return actions the program uses; the kernel lists those it has in `KERNEL_ACTIONS`."""
KERNEL_ACTIONS = "sys/kernel/seccomp/actions_avail"
"""Under /proc: present when the kernel has seccomp filters (CONFIG_SECCOMP_FILTER)."""


def kernel_lacks(proc: Path = Path("/proc")) -> list[str]:
    """The `ACTIONS` the kernel whose /proc is `proc` cannot return (all of them without seccomp
    filters): bwrap fails to load the program on such a kernel."""
    try:
        available = (proc / KERNEL_ACTIONS).read_text().split()
    except OSError:
        available = []
    return [a for a in ACTIONS if a not in available]


def program_fd() -> int | None:
    """A memory file holding `filter_program()`, at offset 0, for bwrap's `--seccomp FD` (the caller
    closes it once bwrap has started); None where there is no program."""
    program = filter_program()
    if program is None:
        return None
    fd = os.memfd_create("hrl-seccomp", os.MFD_CLOEXEC)
    os.write(fd, program)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd
