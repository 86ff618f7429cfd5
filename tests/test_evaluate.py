"""`harnessrl eval` end to end: real sandboxes, the real proxy, real harness processes, the scripted
engine replaying each task's reference. Whitebox in the default run (its agent is a stdlib program,
seconds per rollout); Claude Code, Codex and OpenClaw under the `harness` marker; the embedded
SmolLM2 through the CLI in a `slow` test."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from harness_solve import scripted_engine_config

from harnessrl.config import Config
from harnessrl.evaluate import Policy, eval_seed, evaluate, write_report
from harnessrl.tasks import load_tasks
from harnessrl.train.sft import demo_engine
from harnessrl.types import Task

REPO = Path(__file__).resolve().parents[1]
needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")


def bundled_test_tasks(n: int = 2) -> list[Task]:
    return load_tasks("bundled", split="test").tasks[:n]


def config(out: Path, runs: int = 2) -> Config:
    cfg = scripted_engine_config()
    cfg.eval.runs = runs
    cfg.eval.out_dir = str(out)
    return cfg


@needs_bwrap
async def test_whitebox_two_policies_seeds_failures_and_report(tmp_path: Path) -> None:
    tasks = bundled_test_tasks(1)
    cfg = config(tmp_path)
    harness = "whitebox:00000"
    engine = demo_engine(cfg, tasks, harness)
    engine.fault_calls = frozenset({0})  # type: ignore[attr-defined]  # the first call of all fails
    policies = [Policy("a", "tiny-qwen3"), Policy("b", "tiny-qwen3")]
    report = await evaluate(
        cfg, tasks, harnesses=[harness], policies=policies, engine=engine, echo=lambda _: None
    )
    a, b = report["policies"]["a"]["summary"], report["policies"]["b"]["summary"]
    # policy a: one of its 2 rollouts is an engine_error: scored 0, kept in the denominator
    assert a["statuses"] == {"engine_error": 1, "ok": 1} and a["rollouts"] == 2
    assert a["pass1"] == 0.5 and sorted(a["per_run"]) == [0.0, 1.0] and a["mean_score"] == 0.5
    assert a["pass_at_k"] == {"1": 0.5, "2": 1.0} and a["pass_hat_k"] == {"1": 0.5, "2": 0.0}
    assert b["statuses"] == {"ok": 2} and b["pass1"] == 1.0 and b["se"] == 0.0
    assert report["transfer"] == {"a": {harness: 0.5}, "b": {harness: 1.0}}
    # paired: one task, b - a = 1/2 on it; every resample is that task: the interval is the point
    (cmp,) = report["paired"]
    assert (cmp["policy"], cmp["baseline"]) == ("b", "a")
    got = cmp["overall"]
    assert (got["difference"], got["lo"], got["hi"], got["excludes_zero"]) == (0.5, 0.5, 0.5, True)
    assert cmp["by_harness"][harness] == got and (got["tasks"], got["up"], got["resamples"]) == (1, 1, 10_000)
    assert list(report["policies"]["b"]["space"]) == ["in_space_train"]  # 00000 is in the OA
    seeds = {(o["policy"], o["run"]): o["seed"] for o in report["outcomes"]}
    assert seeds[("a", 1)] == seeds[("b", 1)] == eval_seed(0, tasks[0].id, harness, 1)
    assert seeds[("a", 0)] != seeds[("a", 1)]
    paths = write_report(report, tmp_path)
    assert json.loads(paths["json"].read_text())["policies"]["b"]["summary"]["pass1"] == 1.0
    md = paths["markdown"].read_text()
    assert "## Transfer (Pass@1, policy x eval harness)" in md and f"| a | {harness} | 0.500" in md
    assert f"| b | a | {harness} | +0.500 | [+0.500, +0.500] | yes | 1 / 0 / 0 | - |" in md
    assert (tmp_path / "rollouts" / "b" / f"b-{tasks[0].id}-whitebox_00000-r1" / "rollout.json").is_file()


@needs_bwrap
async def test_per_category_evaluates_a_harness_on_a_subset(tmp_path: Path) -> None:
    """`eval.per_category`: whitebox:00010 only on the first task of each category, 00000 on all;
    the report says so, and a harness it names that is not evaluated is an error."""
    from harnessrl.tasks.generate import generate

    generate(["create_file", "move_file"], 2, 0, tmp_path / "tasks")
    tasks = load_tasks(tmp_path / "tasks").tasks
    cfg = config(tmp_path / "eval", runs=1)
    cfg.eval.per_category = {"whitebox:00010": 1}
    report = await evaluate(cfg, tasks, harnesses=["whitebox:00000", "whitebox:00010"], echo=lambda _: None)
    pairs = sorted((o["harness"], o["task_id"]) for o in report["outcomes"])
    subset = ["task_create_file_train_s0_0000", "task_move_file_train_s0_0000"]
    assert pairs == sorted(
        [("whitebox:00000", t.id) for t in tasks] + [("whitebox:00010", t) for t in subset]
    )
    assert {o["passed"] for o in report["outcomes"]} == {True}
    assert report["config"]["per_category"] == {"whitebox:00010": 1}
    md = write_report(report, tmp_path / "eval")["markdown"].read_text()
    assert "Through whitebox:00010 only the first 1 tasks of each category." in md
    cfg.eval.per_category = {"claude-code": 5}
    with pytest.raises(ValueError, match=r"eval.per_category names \['claude-code'\], not evaluated"):
        await evaluate(cfg, tasks, harnesses=["whitebox:00000"], echo=lambda _: None)


@pytest.mark.harness
@needs_bwrap
@pytest.mark.skipif(shutil.which("npm") is None, reason="npm is needed to install the harnesses")
async def test_real_harnesses_scripted(tmp_path: Path) -> None:
    tasks = bundled_test_tasks(1)
    cfg = config(tmp_path)
    harnesses = ["claude-code", "codex", "openclaw"]
    report = await evaluate(cfg, tasks, harnesses=harnesses, echo=lambda _: None)
    entry = report["policies"]["tiny-qwen3"]
    for h in harnesses:
        s = entry["by_harness"][h]
        assert (s["pass1"], s["mean_score"], s["statuses"], s["pairs"]) == (1.0, 1.0, {"ok": 2}, 1), h
    assert entry["summary"]["pass1"] == 1.0 and entry["summary"]["rollouts"] == 6
    assert "space" not in entry  # no white-box configuration evaluated
    assert "transfer" not in report


def _cli(args: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    argv = [sys.executable, "-c", "from harnessrl.cli import app; app()", *args]
    return subprocess.run(argv, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=1200)


@pytest.mark.slow
@needs_bwrap
def test_cli_embedded_model_through_whitebox(tmp_path: Path) -> None:
    """`harnessrl eval` with the embedded SmolLM2 (untrained: it answers in prose, so nothing passes)."""
    out = tmp_path / "ev"
    args = ["eval", "--tasks", "bundled", "--split", "test", "--limit", "1", "--harness", "whitebox:00000"]
    args += ["--engine", "hf", "--runs", "2", "--out", str(out), "-o", "engine.sampling.max_tokens=32"]
    args += ["-o", "eval.harness_options={whitebox = {max_steps = 2}}"]
    res = _cli(args, tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
    report = json.loads((out / "eval.json").read_text())
    s = report["policies"]["default"]["summary"]
    assert s["rollouts"] == 2 and sum(s["statuses"].values()) == 2
    assert "Loading weights" not in res.stdout + res.stderr  # no progress bars in a log
    assert "Pass@1" in res.stdout and (out / "eval.md").is_file()


@pytest.mark.slow
@pytest.mark.harness
@needs_bwrap
@pytest.mark.skipif(shutil.which("npm") is None, reason="npm is needed to install the harnesses")
def test_cli_embedded_model_through_the_real_harnesses(tmp_path: Path) -> None:
    """`harnessrl eval` with the embedded SmolLM2 through Claude Code (bare), Codex and OpenClaw on a
    bundled test task, 2 runs each (16,384 tokens of context: Codex's and OpenClaw's first prompts are
    ~9-10k). The small model mostly fails; the point is that every rollout is counted, by status, in
    the denominator, and the report's numbers agree with its own outcomes."""
    out = tmp_path / "ev"
    harnesses = ["claude-code", "codex", "openclaw"]
    args = ["eval", "--tasks", "bundled", "--split", "test", "--limit", "1", "--engine", "hf", "--runs", "2"]
    args += [a for h in harnesses for a in ("--harness", h)] + ["--out", str(out)]
    args += ["-o", "engine.sampling.max_tokens=64", "-o", "engine.context_length=16384"]
    args += ["-o", "rollout.timeout_s=300", "-o", 'eval.harness_options={"claude-code" = {bare = true}}']
    res = _cli(args, tmp_path)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    report = json.loads((out / "eval.json").read_text())
    entry = report["policies"]["default"]
    assert sorted(entry["by_harness"]) == harnesses
    outcomes = [o for o in report["outcomes"] if o["policy"] == "default"]
    assert len(outcomes) == 6 and entry["summary"]["rollouts"] == 6
    allowed = {"ok", "timeout", "harness_error", "engine_error"}
    for h in harnesses:
        mine = [o for o in outcomes if o["harness"] == h]
        s = entry["by_harness"][h]
        assert sum(s["statuses"].values()) == 2 and set(s["statuses"]) <= allowed, s["statuses"]
        per_run = [float(sum(o["passed"] for o in mine if o["run"] == r)) for r in (0, 1)]
        assert s["pass1"] == pytest.approx(sum(per_run) / 2)
    assert "Loading weights" not in res.stdout + res.stderr


@needs_bwrap
def test_cli_prints_a_line_per_finished_rollout_in_a_log(tmp_path: Path) -> None:
    """stdout is a pipe here (a log): one progress line per finished rollout, then the tables; the
    eval's TensorBoard events hold its scalars and tables."""
    from harnessrl.report.tbevents import read_scalars, read_texts

    out = tmp_path / "ev"
    args = ["eval", "--tasks", "bundled", "--split", "test", "--limit", "1", "--harness", "whitebox:00000"]
    args += ["--engine", "scripted", "--runs", "2", "--out", str(out)]
    res = _cli(args, tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
    task = bundled_test_tasks(1)[0].id
    first = "eval: 1 task(s) x 1 harness(es) x 2 run(s) x 1 policy = 2 rollouts -> " + str(out)
    assert res.stdout.splitlines()[0] == first  # the scripted engine: no defaults to bound
    lines = [line for line in res.stdout.splitlines() if line.startswith("[eval ")]
    assert [line.split(" | ")[:2] for line in lines] == [
        ["[eval 1/2] ok reward 1.000", f"{task} whitebox:00000"],
        ["[eval 2/2] ok reward 1.000", f"{task} whitebox:00000"],
    ]
    assert sorted(line.rsplit("rollout ", 1)[1] for line in lines) == [
        f"default-{task}-whitebox_00000-r0",
        f"default-{task}-whitebox_00000-r1",
    ]
    (events,) = (out / "tb").iterdir()
    assert read_scalars(events)["pass1/default"] == [(0, 1.0)]
    assert "eval/policies" in read_texts(events) and "config" in read_texts(events)


@needs_bwrap
def test_cli_json_is_the_summaries_on_stdout(tmp_path: Path) -> None:
    """`--json`: stdout is one JSON object (what a script reads); the progress lines go to stderr."""
    out = tmp_path / "ev"
    args = ["eval", "--tasks", "bundled", "--split", "test", "--limit", "1", "--harness", "whitebox:00000"]
    args += ["--engine", "scripted", "--runs", "1", "--out", str(out), "--json"]
    res = _cli(args, tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
    shown = json.loads(res.stdout)
    assert shown["report"] == str(out / "eval.json") and shown["markdown"] == str(out / "eval.md")
    report = json.loads((out / "eval.json").read_text())
    assert shown["policies"] == {
        "default": {k: report["policies"]["default"][k] for k in ("summary", "by_harness")}
    }
    assert shown["policies"]["default"]["summary"]["pass1"] == 1.0 and shown["paired"] == []
    assert res.stderr.startswith("eval: 1 task(s) x 1 harness(es) x 1 run(s) x 1 policy = 1 rollouts")
    assert "[eval 1/1] ok reward 1.000" in res.stderr
