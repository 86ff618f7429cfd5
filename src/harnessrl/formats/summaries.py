"""The summaries of two experiments, each a JSON object beside its markdown table.

    write_quickstart(out, summary)   <out>/quickstart.json  `experiments.quickstart.run_quickstart`
    read_quickstart(path)            {policies: {policy: eval summary}, paired, seconds, heldout_tasks, sft}
    write_ablation(out, summary)     <out>/ablation.json    `experiments.ablation.run_ablation`
    read_ablation(path)              {policies, eval_configs, out_of_space, arms, seconds, heldout_tasks, sft}

Their fields are documented where they are built (`experiments/quickstart.py`, `experiments/ablation.py`);
a reader checks what its users need (the ablation's seed table: `policies`, `eval_configs`,
`out_of_space`) and raises `FormatError` naming the file and the field for anything else, as it does
for a file that is not UTF-8 or not JSON.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harnessrl.formats import read_fields, require_names, write_json_object

QUICKSTART_FILE = "quickstart.json"
ABLATION_FILE = "ablation.json"


def write_quickstart(out: Path, summary: dict[str, Any]) -> Path:
    """Write `<out>/quickstart.json` and return its path."""
    return write_json_object(out / QUICKSTART_FILE, summary)


def read_quickstart(path: Path) -> dict[str, Any]:
    """The quickstart summary in `path`: `policies` and `paired` objects, `seconds` an object."""
    return read_fields(
        path,
        {
            "policies": (dict, "an object of policies"),
            "paired": (dict, "an object of paired differences"),
            "seconds": (dict, "an object of stage seconds"),
        },
    )


def write_ablation(out: Path, summary: dict[str, Any]) -> Path:
    """Write `<out>/ablation.json` and return its path."""
    return write_json_object(out / ABLATION_FILE, summary)


def read_ablation(path: Path) -> dict[str, Any]:
    """The ablation summary in `path`: `policies` an object, `eval_configs` (white-box codes) and
    `out_of_space` (harness names) lists of strings."""
    summary = read_fields(path, {"policies": (dict, "an object of policies")})
    require_names(path, summary, "eval_configs")
    require_names(path, summary, "out_of_space")
    return summary
