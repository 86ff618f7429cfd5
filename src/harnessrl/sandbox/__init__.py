"""Ephemeral sandboxes for rollouts and checkers: bubblewrap isolation, a local fallback, a pool.

`Sandbox` (one per rollout), `SandboxSpec` (what it is made of), `ExecResult`, `SandboxPool`
(prewarmed sandboxes). The verifier's CommandRunner on a sandbox (one fresh sandbox per command) is
`verify/sandboxed.py`. See `sandbox.py` for the lifecycle and `bwrap.py` for what is and is not isolated.
"""

from harnessrl.sandbox.pool import SandboxPool
from harnessrl.sandbox.sandbox import Sandbox
from harnessrl.sandbox.spec import ExecResult, SandboxSpec

__all__ = ["ExecResult", "Sandbox", "SandboxPool", "SandboxSpec"]
