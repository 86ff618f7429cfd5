"""The bundled sample task set: layout, and that every checker separates wrong from right.

Every task under `src/harnessrl/tasks/bundled/<split>/task_XXXX/` is loaded with
`load_tasks("bundled")` and scored through the verifier API: `self_check` (what `harnessrl tasks check`
runs) gives the untouched workspace (must score < 1.0) and the `reference/solve.sh` workspace (exactly
1.0); `run_checker` scores the reference followed by a deliberately wrong edit (WRONG, must score
< 1.0). A fourth workspace has every file overwritten with garbage bytes and is scored the way
`reward.sh` does it, `python check.py <workspace>`: the checker must still print a dict of 0.0/1.0
values (it never raises).

All runs happen once per session in a small thread pool (checkers spend their time in subprocesses);
the per-task tests then read the cached scores so that each failure names its task.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from harnessrl.tasks import load_tasks, materialize_workspace
from harnessrl.types import Task
from harnessrl.verify import CheckResult, run_checker
from harnessrl.verify.selfcheck import self_check

BUNDLED = Path(__file__).resolve().parents[1] / "src" / "harnessrl" / "tasks" / "bundled"
TASK_DIRS = sorted(BUNDLED.glob("*/task_*"))
TASK_IDS = [d.name for d in TASK_DIRS]
LOADED = load_tasks("bundled")
CATEGORIES = {"warmup", "file_edit", "data_processing", "code_fix", "report_writing"}
# Scripts call `python3`: make it this interpreter (a pyenv shim costs ~1 s per start).
ENV = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
REWARD_SH = (
    "#!/usr/bin/env bash\nset -euo pipefail\n\npython3 /root/.openclaw/workspace/reward/check.py "
    "/root/.openclaw/workspace | python3 -c 'import json, sys; data = json.loads(sys.stdin.read().strip()); "
    "print(sum(float(v) for v in data.values()) / len(data) if isinstance(data, dict) and data else "
    "float(data) if isinstance(data, (int, float)) else 0.0)'\n"
)

# Plausible wrong answers: a shell command run in the workspace AFTER the reference solution.
WRONG: dict[str, str] = {
    "task_0000": "printf 'hello, harness\\n' > hello.txt",
    "task_0001": "printf '\\n' >> notes/todo.txt",
    "task_0002": "cp report_final.md draft_report.md",
    "task_0003": "echo x > project/src/__init__.py",
    "task_0004": 'printf \'{"name": "demo", "port": "8080", "debug": false}\' > config.json',
    "task_0005": "rm data/raw.csv",
    "task_0006": "touch cache/img/late.tmp",
    "task_0007": "sed -i 's/^workers = 4/workers = 5/' settings.ini",
    "task_0008": "sed -i 's/### Fixed/### Added/' CHANGELOG.md",
    "task_0009": "sort requirements.txt -o requirements.txt",
    "task_0010": "sed -i 's/^  /\\t/' app/config.json",
    "task_0011": "sed -i 's/#faq--troubleshooting/#faq-troubleshooting/' docs/guide.md",
    "task_0012": "echo '*.log' >> .dockerignore",
    "task_0013": "sed -i 's/0.8.1/0.9.0/g' pyproject.toml",
    "task_0014": "echo lamp > out/top_product.txt",
    "task_0015": "sort clean/events.jsonl -o clean/events.jsonl",
    "task_0016": "sed -i '/^C04,/d' report/customer_totals.csv",
    "task_0017": "echo 'RT-104,Cable ties,0' >> reorder.csv",
    "task_0018": 'sed -i \'s/"top_path_hits": 5/"top_path_hits": 4/\' stats.json',
    "task_0019": "sed -i 's/75.8/75.85/' summary.json",
    "task_0020": "echo '2026-03-03,0,,,' >> data/daily_stats.csv",
    "task_0021": "(head -1 employees.csv; tail -n +2 employees.csv | sort) > e.csv && mv e.csv employees.csv",
    "task_0022": "echo T-004 >> out/flagged.txt",
    "task_0023": "sed -i 's/<= limit/< limit/' textutils.py",
    "task_0024": "echo '# tweak' >> test_stats.py",
    "task_0025": "sed -i 's/ or year % 400 == 0//' billing/dates.py",
    "task_0026": "sed -i 's| + 50) // 100|) // 100|' shop/cart.py",
    "task_0027": "sed -i 's/v = value.strip().lower()/v = value.lower()/' kvconfig.py",
    "task_0028": "sed -i 's|(total + per_page - 1) // per_page|total // per_page + 1|' api/pagination.py",
    "task_0029": "sed -i 's/| 2026-02 | 389 | -23 |/| 2026-02 | 389 | 23 |/' reports/signups.md",
    "task_0030": "sed -i 's/^- INC-307 (auth)$/- INC-307/' incident_review.md",
    "task_0031": "sed -i 's/| kestrel-3b | 40.4 | - |/| kestrel-3b | 40.4 | 0.0 |/' eval/results.md",
    "task_0032": "echo '- Support' >> finance/budget_review.md",
    "task_0033": "sed -i 's/72.7%/66.7%/' ci/test_report.md",
    "task_0034": "echo 22 > count.txt",
    "task_0035": "echo hi > logs/.keep",
    "task_0036": "sed -i 's/^- \\[ \\] Priya: draft/- [ ] Priya:  draft/' meeting_notes.md",
    "task_0037": "tr 'A-Z' 'a-z' < contacts.csv > lower.csv && mv lower.csv contacts.csv",
    "task_0038": "sed -i 's/3.83/3.8/' survey/results.json",
    "task_0039": "sed -i 's/2011$/1998/' catalog.csv",
    "task_0040": "sed -i 's/if not 1 <= n <= 3999:/if n < 1:/' roman.py",
    "task_0041": "sed -i 's/if idx < len(row) and /if /' tools/csvsum.py",
    "task_0042": "sed -i 's/^| 2026-10-05 |/| 2026-10-07 |/' analytics/traffic_report.md",
    "task_0043": "sed -i 's/^| Mei Lin |/| mlin |/' repo/contributors.md",
}


@dataclass
class Scores:
    """Metrics of one task on its four workspaces (None: no valid metrics dict came back)."""

    untouched: dict[str, float] | None = None
    reference: dict[str, float] | None = None
    wrong: dict[str, float] | None = None
    garbage: dict[str, float] | None = None
    errors: list[str] = field(default_factory=list)


def _mean(scores: dict[str, float] | None) -> float:
    return sum(scores.values()) / len(scores) if scores else 0.0


def _metrics(result: CheckResult | None, what: str, errors: list[str]) -> dict[str, float] | None:
    if result is None or result.error is not None:
        errors.append(
            f"{what}: {result.error if result else 'not run'} {result.stderr_tail if result else ''}"
        )
        return None
    return result.metrics


def _check_main(task_dir: Path, workspace: Path, errors: list[str]) -> dict[str, float] | None:
    """Run `python check.py <workspace>` as reward.sh does; the printed JSON dict."""
    done = subprocess.run(
        [sys.executable, "-B", str(task_dir / "reward" / "check.py"), str(workspace)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    try:
        data = json.loads(done.stdout)
    except json.JSONDecodeError:
        errors.append(f"main(): rc={done.returncode} out={done.stdout!r} err={done.stderr[-500:]}")
        return None
    return data if isinstance(data, dict) else None


def _sh(script: str, workspace: Path, errors: list[str]) -> None:
    done = subprocess.run(
        ["bash", "-c", script], cwd=workspace, env=ENV, capture_output=True, text=True, timeout=60
    )
    if done.returncode != 0:
        errors.append(f"{script[:80]!r} failed: {done.stderr[-500:]}")


def _garble(workspace: Path) -> None:
    for path in workspace.rglob("*"):
        if path.is_file():
            path.write_bytes(b"\x00\xff garbage {[ not json, not csv\n\xfe")


def _solved_workspace(task: Task, ws: Path, errors: list[str]) -> None:
    materialize_workspace(task, ws)
    assert task.reference is not None and task.reference.source is not None
    _sh(f"bash {task.reference.source}", ws, errors)


def _score_task(task: Task, tmp: Path) -> Scores:
    out = Scores()
    checked = self_check(task)
    out.untouched = _metrics(checked.untouched, "untouched", out.errors)
    out.reference = _metrics(checked.reference, "reference", out.errors)
    if checked.reference_error:
        out.errors.append(checked.reference_error)
    if task.id in WRONG:
        ws = tmp / task.id / "wrong"
        _solved_workspace(task, ws, out.errors)
        _sh(WRONG[task.id], ws, out.errors)
        out.wrong = _metrics(run_checker(task, ws), "wrong", out.errors)
    ws = tmp / task.id / "garbage"
    _solved_workspace(task, ws, out.errors)
    _garble(ws)
    out.garbage = _check_main(TASK_DIRS[TASK_IDS.index(task.id)], ws, out.errors)
    return out


@pytest.fixture(scope="module")
def all_scores() -> dict[str, Scores]:
    tmp = Path(tempfile.mkdtemp(prefix="bundled-"))
    try:
        with ThreadPoolExecutor(max_workers=min(4, os.cpu_count() or 1)) as pool:
            results = pool.map(lambda t: _score_task(t, tmp), LOADED.tasks)
            return {t.id: r for t, r in zip(LOADED.tasks, results, strict=True)}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def test_loader_accepts_every_task() -> None:
    assert LOADED.rejected == []
    assert sorted(t.id for t in LOADED.tasks) == sorted(TASK_IDS)
    for task in LOADED.tasks:
        task_dir = TASK_DIRS[TASK_IDS.index(task.id)]
        assert task.split == task_dir.parent.name
        assert task.reference is not None and task.reference.path == "reference/solve.sh"
        assert task.checker is not None and task.checker.entry == "reward/check.py"
        assert not any(f.path.startswith(("reward/", "reference/")) for f in task.workspace)


def test_set_size_and_split() -> None:
    splits = Counter(d.parent.name for d in TASK_DIRS)
    assert set(splits) == {"train", "test"}
    assert splits["train"] >= 30 and splits["test"] >= 10
    assert len(set(TASK_IDS)) == len(TASK_IDS) >= 44
    categories = Counter(
        json.loads((d / "data_entry.json").read_text())["metadata"]["category"] for d in TASK_DIRS
    )
    assert set(categories) == CATEGORIES
    assert categories["warmup"] >= 8
    assert min(categories.values()) >= 6


@pytest.mark.parametrize("task_dir", TASK_DIRS, ids=TASK_IDS)
def test_layout(task_dir: Path) -> None:
    entry = json.loads((task_dir / "data_entry.json").read_text())
    assert sorted(entry) == ["input_mount_dir", "metadata", "task_id", "user_query"]
    assert entry["task_id"] == task_dir.name
    assert entry["input_mount_dir"] == "/root/.openclaw/workspace"
    assert entry["metadata"]["grading_type"] == "automated"
    assert entry["metadata"]["category"] in CATEGORIES
    assert len(entry["user_query"]) > 40
    assert (task_dir / "input_files").is_dir() and any((task_dir / "input_files").rglob("*"))
    assert (task_dir / "reward" / "reward.sh").read_text() == REWARD_SH
    source = (task_dir / "reward" / "check.py").read_text()
    compile(source, "check.py", "exec")
    assert "def grade(transcript" in source and "def main()" in source
    solve = (task_dir / "reference" / "solve.sh").read_text().splitlines()
    assert solve[0] == "#!/usr/bin/env bash"
    if entry["metadata"]["category"] == "warmup":
        assert len(solve) == 2, "a warmup reference is one command line (replayed as one tool call)"


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_checker_scores(task_id: str, all_scores: dict[str, Scores]) -> None:
    s = all_scores[task_id]
    assert s.errors == []
    assert s.reference is not None and s.untouched is not None and s.garbage is not None
    assert 4 <= len(s.reference) <= 10
    for run in (s.untouched, s.reference, s.garbage, s.wrong):
        if run is not None:
            assert sorted(run) == sorted(s.reference)
            assert set(run.values()) <= {0.0, 1.0}
    assert _mean(s.reference) == 1.0, {k: v for k, v in s.reference.items() if v < 1.0}
    assert _mean(s.untouched) < 1.0
    assert _mean(s.garbage) < 1.0
    if task_id in WRONG:
        assert s.wrong is not None and _mean(s.wrong) < 1.0


def test_every_task_has_a_wrong_answer() -> None:
    assert sorted(WRONG) == sorted(TASK_IDS)
