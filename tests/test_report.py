"""`harnessrl plot` and `harnessrl report` on a run folder, and the page opened in a real headless
Chromium (Debian package `chromium`): the screenshot shows the curves, the console stays silent.

The run folder is made the way a run makes it: metrics records through `MetricsSink`, rollout folders
with ModelCalls whose ids are the real Qwen3 tokenization of a conversation (tokenizer recorded), an
eval report under eval/. Chromium is installed by `scripts/setup` when CI is set; elsewhere the
browser test is skipped when it is missing.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from support import assert_torch_free
from typer.testing import CliRunner

from harnessrl.cli import app
from harnessrl.report.plot import PLOTS
from harnessrl.trace.decode import load_tokenizer, tokenizer_file
from harnessrl.train.metrics import MetricsSink
from harnessrl.types import ModelCall, Rollout, RolloutStatus

pytest.importorskip("matplotlib")
PIL = pytest.importorskip("PIL.Image")


def step_record(step: int) -> dict[str, Any]:
    return {
        "step": step,
        "reward": {"n": 4, "mean": 0.25 * step, "std": 0.1},
        "status": {"ok": 3, "timeout": step % 2, "filtered:over_branching": 1},
        "groups": {"scheduled": 2, "trained": 2, "zero_variance": 1 - step % 2},
        "tree": {"tokens_per_call": 900 + step, "tokens_unique": 300},
        "trainer": {"trained_tokens": 40, "entropy": 2.0 - 0.5 * step, "grad_norm": 0.3,
                    "mismatch/abs_mean": 1e-3, "mismatch/abs_max": 2e-2, "mismatch/frac_truncated": 0.05},
        "time": {"rollouts": 30.0, "trees": 0.5, "advantages": 0.1, "train": 8.0, "weights": 0.4,
                 "step": 39.0},
        "outcomes": {"pass_rate": 0.2 * step, "reward_by_kind": {"whitebox": {"n": 4, "mean": 0.25 * step,
                     "std": 0.1}}, "seconds": {"agent": 90.0, "verify": 30.0}},
    }  # fmt: skip


PROMPT = "<|im_start|>user\ncount the lines of data.csv<|im_end|>\n<|im_start|>assistant\n"


def conversation_call(rollout_id: str, qwen3: Any) -> ModelCall:
    prompt = qwen3.encode(PROMPT, add_special_tokens=False).ids
    output = qwen3.encode("There are 42 lines.<|im_end|>", add_special_tokens=False).ids
    return ModelCall(call_id=f"{rollout_id}-c0", rollout_id=rollout_id, index=0, dialect="openai_chat",
                     prompt_ids=prompt, output_ids=output, output_logprobs=[-0.1] * len(output),
                     model_id="tiny-qwen3", tokenizer="qwen3",
                     tokenizer_digest=load_tokenizer("qwen3").digest,
                     weights_version=0)  # fmt: skip


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tokenizers import Tokenizer

    root = tmp_path_factory.mktemp("run")
    sink = MetricsSink(root)
    for step in range(3):
        sink.write(step_record(step))
    qwen3 = Tokenizer.from_file(str(tokenizer_file("qwen3")))
    for rid, reward, status in (("s000000-t0-whitebox_01220-0", 1.0, "ok"),
                                ("s000000-t0-whitebox_01220-1", 0.0, "timeout")):  # fmt: skip
        folder = root / "rollouts" / rid
        folder.mkdir(parents=True)
        (folder / "calls.jsonl").write_text(conversation_call(rid, qwen3).model_dump_json() + "\n")
        head = Rollout(rollout_id=rid, task_id="t0", harness="whitebox:01220", reward=reward,
                       status=RolloutStatus(status))  # fmt: skip
        (folder / "rollout.json").write_text(head.model_dump_json())
    (root / "eval").mkdir()
    report = {"title": "held-out eval", "pass_at_1": 0.4, "runs": 3,
              "per_harness": {"codex": {"pass_at_1": 0.5, "mean_score": 0.61}},
              "per_task": [{"task": "t0", "pass_at_1": 0.6667}, {"task": "t1", "pass_at_1": 0.0}],
              }  # fmt: skip
    (root / "eval" / "eval.json").write_text(json.dumps(report))
    (root / "eval" / "eval.md").write_text("# eval\n")
    return root


@pytest.fixture(scope="module")
def page(run_dir: Path) -> Path:
    """`harnessrl report RUN_DIR`, run once for the tests that read or render the page."""
    res = CliRunner().invoke(app, ["report", str(run_dir)])
    assert res.exit_code == 0, res.output
    assert res.stdout == f"wrote {run_dir / 'report.html'}\n"
    return run_dir / "report.html"


def test_plot_writes_every_curve(run_dir: Path) -> None:
    res = CliRunner().invoke(app, ["plot", str(run_dir)])
    assert res.exit_code == 0, res.output
    assert res.stdout.splitlines() == [f"wrote {run_dir / 'plots' / f'{n}.png'}" for n in PLOTS]
    for name in PLOTS:
        with PIL.open(run_dir / "plots" / f"{name}.png") as img:
            assert img.size == (640, 360)


def test_report_is_self_contained_with_eval_tables_and_tree_links(run_dir: Path, page: Path) -> None:
    html = page.read_text()
    assert "<script" not in html
    assert re.findall(r'src="(?!data:image/png;base64,)', html) == []
    assert html.count('src="data:image/png;base64,') == len(PLOTS)
    assert "<h3>held-out eval" in html and '<td>codex</td><td class="num">0.5</td>' in html
    assert '<td>t0</td><td class="num">0.6667</td>' in html and "href='eval/eval.md'" in html
    links = re.findall(r'href="(trees/[^"]+)"', html)
    assert links == [f"trees/s000000-t0-whitebox_01220-{i}.html" for i in (0, 1)]
    tree = (run_dir / links[0]).read_text()
    assert "There are 42 lines.&lt;|im_end|&gt;" in tree  # decoded with the recorded tokenizer
    assert "engine: model tiny-qwen3 · tokenizer qwen3 · weights v0" in tree


def test_report_tolerates_a_bare_folder(tmp_path: Path) -> None:
    res = CliRunner().invoke(app, ["report", str(tmp_path)])
    assert res.exit_code == 0, res.output
    page = (tmp_path / "report.html").read_text()
    assert "no metrics to plot" in page and "no eval reports (eval/*.json)" in page
    (tmp_path / "eval").mkdir()
    (tmp_path / "eval" / "broken.json").write_text("{not json")
    CliRunner().invoke(app, ["report", str(tmp_path)])
    assert "broken.json: not readable as JSON" in (tmp_path / "report.html").read_text()
    assert CliRunner().invoke(app, ["plot", str(tmp_path)]).exit_code == 2


# -- in a real browser ------------------------------------------------------------------------------


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed; scripts/setup installs it (apt) when CI is set")
        pytest.skip(
            "chromium is not installed (apt-get install chromium, or HARNESSRL_BROWSER=1 scripts/setup)"
        )
    return found


def render(page: Path, png: Path, profile: Path) -> list[str]:
    """Screenshot `page` (1280x2000) in headless Chromium; returns the console messages it logged."""
    argv = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
            f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0", "--window-size=1280,2000",
            f"--screenshot={png}", page.resolve().as_uri()]  # fmt: skip
    res = subprocess.run(argv, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert res.returncode == 0 and png.is_file(), res.stderr[-3000:]
    return [line for line in res.stderr.splitlines() if ":CONSOLE" in line]


def test_page_renders_in_chromium(page: Path, tmp_path: Path) -> None:
    shot = tmp_path / "page.png"
    assert render(page, shot, tmp_path / "profile") == []  # no console output at all
    with PIL.open(shot) as img:
        rgb = np.asarray(img.convert("RGB"), dtype=np.int32)
    assert rgb.shape == (2000, 1280, 3)
    non_white = int((rgb != 255).any(axis=2).sum())
    curve_blue = int((np.abs(rgb - np.array([0x1F, 0x77, 0xB4])) < 24).all(axis=2).sum())
    assert non_white > 50_000  # text, tables and six charts, not a blank page
    assert curve_blue > 500  # matplotlib's first line colour: the inlined plots were decoded and drawn


def test_console_errors_are_caught(tmp_path: Path) -> None:
    """The check above would see a failing page: an uncaught error is logged to stderr."""
    bad = tmp_path / "bad.html"
    bad.write_text("<!doctype html><body>x<script>undefinedFunction()</script></body>")
    lines = render(bad, tmp_path / "bad.png", tmp_path / "profile")
    assert len(lines) == 1 and "Uncaught ReferenceError: undefinedFunction is not defined" in lines[0]


def test_report_never_imports_torch() -> None:
    assert_torch_free(
        "import sys, harnessrl.report.page, harnessrl.commands.report\n"
        "import harnessrl.progress, harnessrl.train.metrics\n"
    )
