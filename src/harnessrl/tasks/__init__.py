"""Task sets: ClawGym folder and JSONL layouts, PinchBench markdown, the bundled sample set.

Everything loads into the shared `harnessrl.types.Task`; `load_tasks` detects the layout.
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
