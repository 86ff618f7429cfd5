"""Task sets: ClawGym folder and JSONL layouts, PinchBench markdown, Harbor task folders and datasets
(`tasks.harbor`), the bundled sample set, and procedurally generated families.

Everything loads into the shared `harnessrl.types.Task`; `load_tasks` detects the layout and returns
the rejects with file:line. `tasks.generate` writes seeded task families (train families, held-out
instances of them, a held-out family) in the ClawGym folder layout, with checkers, reference and
wrong solutions. `tasks.reward_sh` knows ClawGym's canonical `reward.sh` wrapper. This package never
imports `verify/` (scoring imports task sets, not the other way round): `harnessrl tasks check` lives
in `commands/verify.py`.
"""

from harnessrl.tasks.files import materialize_checker, materialize_workspace
from harnessrl.tasks.loader import TaskSetLoad, bundled_path, load_configured, load_tasks

__all__ = [
    "TaskSetLoad",
    "bundled_path",
    "load_configured",
    "load_tasks",
    "materialize_checker",
    "materialize_workspace",
]
