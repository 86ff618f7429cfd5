"""The bundled sample task set: layout, and that every checker separates wrong from right.

For every task under `src/harnessrl/tasks/bundled/<split>/task_XXXX/` we run its `reward/check.py` as a
subprocess (`python check.py <workspace>`) on three copies of `input_files/`: untouched (must score
< 1.0), after `reference/solve.sh` (must score exactly 1.0), and after the reference followed by a
deliberately wrong edit (listed in WRONG, must score < 1.0). A fourth copy has every file overwritten
with garbage bytes: the checker must still print a dict of 0.0/1.0 values (it never raises).

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

BUNDLED = Path(__file__).resolve().parents[1] / "src" / "harnessrl" / "tasks" / "bundled"
TASK_DIRS = sorted(BUNDLED.glob("*/task_*"))
TASK_IDS = [d.name for d in TASK_DIRS]
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
    """Checker outputs of one task on its four workspaces (None: the checker printed no JSON dict)."""

    untouched: dict[str, float] | None = None
    reference: dict[str, float] | None = None
    wrong: dict[str, float] | None = None
    garbage: dict[str, float] | None = None
    errors: list[str] = field(default_factory=list)


def _mean(scores: dict[str, float] | None) -> float:
    return sum(scores.values()) / len(scores) if scores else 0.0


def _check(task_dir: Path, workspace: Path, errors: list[str]) -> dict[str, float] | None:
    done = subprocess.run(
        [sys.executable, "-B", str(task_dir / "reward" / "check.py"), str(workspace)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    try:
        data = json.loads(done.stdout)
    except json.JSONDecodeError:
        errors.append(
            f"{task_dir.name}: rc={done.returncode} stdout={done.stdout!r} stderr={done.stderr[-500:]}"
        )
        return None
    return data if isinstance(data, dict) else None


def _sh(script: str, workspace: Path, errors: list[str]) -> None:
    done = subprocess.run(
        ["bash", "-c", script], cwd=workspace, env=ENV, capture_output=True, text=True, timeout=60
    )
    if done.returncode != 0:
        errors.append(f"{workspace.name}: {script[:80]!r} failed: {done.stderr[-500:]}")


def _garble(workspace: Path) -> None:
    for path in workspace.rglob("*"):
        if path.is_file():
            path.write_bytes(b"\x00\xff garbage {[ not json, not csv\n\xfe")


def _score_task(task_dir: Path, tmp: Path) -> Scores:
    out = Scores()
    solve = f"bash {task_dir / 'reference' / 'solve.sh'}"
    names = ["untouched", "reference", "garbage"] + (["wrong"] if task_dir.name in WRONG else [])
    for name in names:
        ws = tmp / task_dir.name / name
        shutil.copytree(task_dir / "input_files", ws)
        if name != "untouched":
            _sh(solve, ws, out.errors)
        if name == "wrong":
            _sh(WRONG[task_dir.name], ws, out.errors)
        if name == "garbage":
            _garble(ws)
        setattr(out, name, _check(task_dir, ws, out.errors))
    return out


@pytest.fixture(scope="module")
def all_scores() -> dict[str, Scores]:
    tmp = Path(tempfile.mkdtemp(prefix="bundled-"))
    try:
        with ThreadPoolExecutor(max_workers=min(4, os.cpu_count() or 1)) as pool:
            results = pool.map(lambda d: _score_task(d, tmp), TASK_DIRS)
            return dict(zip(TASK_IDS, results, strict=True))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


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


def test_wrong_solutions_cover_most_tasks() -> None:
    assert set(WRONG) <= set(TASK_IDS)
    assert len(WRONG) >= len(TASK_IDS) // 2
