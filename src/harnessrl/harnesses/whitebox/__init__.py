"""The configurable white-box harness `whitebox:<code>`: the adapter (`adapter.Whitebox`) and the
stdlib-only agent program it installs (`agent/`). Five factors x three levels, one digit each."""

from harnessrl.harnesses.whitebox.adapter import Whitebox

__all__ = ["Whitebox"]
