"""Ephemeral sandboxes for rollouts and checkers: bubblewrap isolation, a local fallback, a pool.

`Sandbox` (one per rollout), `SandboxSpec` (what it is made of), `ExecResult`, `SandboxPool`
(prewarmed sandboxes), `SandboxCommandRunner` (the verifier's CommandRunner, one fresh sandbox per
command). See `sandbox.py` for the lifecycle and `bwrap.py` for what is and is not isolated.
"""

from harnessrl.sandbox.pool import SandboxPool
from harnessrl.sandbox.runner import SandboxCommandRunner
from harnessrl.sandbox.sandbox import Sandbox
from harnessrl.sandbox.spec import ExecResult, SandboxSpec

__all__ = ["ExecResult", "Sandbox", "SandboxCommandRunner", "SandboxPool", "SandboxSpec"]
