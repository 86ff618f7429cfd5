"""`harnessrl doctor`: will a rollout run on this machine? Each check looks at one thing a rollout
needs and names the one command (Debian/Ubuntu) that fixes it.

    results = run_checks(all_checks(Machine()), quick=False, on_result=print_it)

- `check.py`: the records (`Check`, `Outcome`, `Result`, `Machine`), running them (fast ones first
  and in order; the slow ones, which run programs, concurrently) and the table's lines.
- `system.py`: root and CAP_SYS_ADMIN, the user-namespace sysctls (Debian's, the limit, Ubuntu's
  AppArmor), bubblewrap, setpriv, seccomp, cgroups, /dev/shm, disk, overlayfs, idmapped mounts.
- `tools.py`: the [train] packages, the model and tokenizer packages, the agent environment, the C
  compiler, the image tools, iproute2, Node and the system python.
- `harnesses.py`: a real sandbox runs `echo ok`; each harness prints its version inside one.

The probes are the sandbox's, images' and engines' own (`bwrap_path`, `cgroups.probe`,
`seccomp.kernel_lacks`, `missing_tools`, `c_compiler`, `smollm2_gguf`, ...), asked of the paths a
`Machine` names, so a test makes one check fail by pointing one field at a fake.
"""

from harnessrl.doctor.check import Check, Machine, Outcome, Result, run_checks
from harnessrl.doctor.harnesses import harness_checks
from harnessrl.doctor.system import system_checks
from harnessrl.doctor.tools import tool_checks


def all_checks(m: Machine) -> list[Check]:
    """Every check, in the order the table prints them (fast ones first)."""
    checks = [*system_checks(m), *tool_checks(m), *harness_checks(m)]
    return [*(c for c in checks if not c.slow), *(c for c in checks if c.slow)]


__all__ = ["Check", "Machine", "Outcome", "Result", "all_checks", "run_checks"]
