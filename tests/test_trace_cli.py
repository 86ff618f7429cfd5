"""Rendering, loading and the `harnessrl tree` command (run as a real subprocess)."""

from __future__ import annotations

import json
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
from support import assert_torch_free

from harnessrl.trace import build_trace
from harnessrl.trace.load import TraceInputError, load_rollout
from harnessrl.trace.views import render_html, render_text
from harnessrl.types import ModelCall, Rollout


def mc(i: int, prompt: list[int], output: list[int], system: str = "main") -> ModelCall:
    return ModelCall(
        call_id=f"c{i}", rollout_id="r1", index=i, dialect="x", prompt_ids=prompt, output_ids=output,
        output_logprobs=[-0.5] * len(output), system_digest=system,
    )  # fmt: skip


CALLS = [
    mc(0, [1, 2, 3, 10], [11]),
    mc(1, [1, 2, 8, 20], [21], system="sub"),
    mc(2, [1, 2, 3, 10], [12]),
    mc(3, [1, 2, 3, 10, 12, 13], [14]),
]


def _write_rollout(d: Path, calls: list[ModelCall], reward: float | None = 1.0) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    (d / "calls.jsonl").write_text("".join(c.model_dump_json() + "\n" for c in calls))
    (d / "rollout.json").write_text(
        Rollout(rollout_id="r1", task_id="t", harness="h", reward=reward).model_dump_json()
    )
    return d


def test_render_text_exact() -> None:
    text = render_text(build_trace(CALLS, reward=1.0))
    assert text.splitlines() == [
        "rollout r1  reward 1.0  calls 4 {'main': 3, 'subagent': 1}",
        "nodes 6 (kept 4)  live leaves 1  dead leaves 1  retokenized 0  merged duplicates 0",
        "tokens: per-call 22  paths 7  unique 7  (per-call/unique 3.14, paths/unique 1.00)",
        "#0 root  main  2 tok (env 2, model 0)  kept",
        "    env   [1 2]",
        "  #1 under #0  main  2 tok (env 2, model 0)  kept",
        "      env   [3 10]",
        "    #2 under #1  main  1 tok (env 0, model 1)  DROPPED dead_leaf  ends c0",
        "        model [11]",
        "    #3 under #1  main  1 tok (env 0, model 1)  kept  ends c2",
        "        model [12]",
        "    #4 under #3  main  2 tok (env 1, model 1)  kept  ends c3",
        "        env   [13]",
        "        model [14]",
        "  #5 under #0  subagent  3 tok (env 2, model 1)  DROPPED subagent  ends c1",
        "      env   [8 20]",
        "      model [21]",
        "calls:",
        "  c0  #0  main  rendered  prompt 4 output 1  shared 0  -> node #2  dropped dead_leaf",
        "  c1  #1  subagent  rendered  prompt 4 output 1  shared 2  -> node #5  dropped subagent",
        "  c2  #2  main  rendered  prompt 4 output 1  shared 4  -> node #3  kept",
        "  c3  #3  main  rendered  prompt 6 output 1  shared 5  -> node #4  kept",
        "segments:",
        "  S0 main  calls c0,c2,c3  nodes #2,#3,#4",
        "  S1 subagent  calls c1  nodes #5  <- started by - tool call - (S0)  -> answer in c2 (NOT used)",
    ]


def test_render_text_chain_does_not_indent_and_decodes() -> None:
    chain = [mc(0, [1, 2], [3]), mc(1, [1, 2, 3, 4], [5])]
    text = render_text(build_trace(chain), decode=lambda ids: "".join(chr(96 + i) for i in ids))
    assert text.splitlines()[3:9] == [
        "#0 root  main  3 tok (env 2, model 1)  kept  ends c0",
        "    env   'ab'",
        "    model 'c'",
        "#1 under #0  main  2 tok (env 1, model 1)  kept  ends c1",
        "    env   'd'",
        "    model 'e'",
    ]


class _Balance(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.seen: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.seen.append(tag)
        if tag not in ("meta", "br"):
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        assert self.stack and self.stack[-1] == tag, (tag, self.stack[-5:])
        self.stack.pop()


def test_render_html_is_balanced_and_self_contained() -> None:
    calls = [*CALLS, mc(4, [1, 2, 3, 10, 12, 13, 14, 15, *range(100, 900)], [16])]
    page = render_html(build_trace(calls, reward=1.0))
    parser = _Balance()
    parser.feed(page)
    assert parser.stack == []
    assert parser.seen.count("details") == 7 + 1  # seven nodes, one long segment collapsed
    assert "<script" not in page and "http" not in page and "<link" not in page
    assert 'class="node k-main dropped" open><summary>#2 main' in page
    assert '<span class="reason">dropped: dead_leaf</span>' in page
    assert '<pre class="model">14</pre>' in page
    assert page.count('<div class="branch">') == 4  # two branch points, two children each


def test_render_html_with_several_roots() -> None:
    page = render_html(build_trace([mc(0, [1], [2]), mc(1, [5], [6], system="sub")]))
    parser = _Balance()
    parser.feed(page)
    assert parser.stack == []
    assert page.count('<div class="branch">') == 2


def test_load_rollout_layouts(tmp_path: Path) -> None:
    d = _write_rollout(tmp_path / "r", CALLS, reward=0.25)
    r = load_rollout(d)
    assert (r.rollout_id, r.reward, [c.call_id for c in r.calls]) == ("r1", 0.25, ["c0", "c1", "c2", "c3"])
    bare = load_rollout(d / "calls.jsonl")
    assert (bare.rollout_id, bare.reward, len(bare.calls)) == ("r1", None, 4)
    only_meta = tmp_path / "m"
    only_meta.mkdir()
    full = Rollout(rollout_id="x", task_id="t", harness="h", reward=1.0, calls=CALLS[:2])
    (only_meta / "rollout.json").write_text(full.model_dump_json())
    assert [c.call_id for c in load_rollout(only_meta).calls] == ["c0", "c1"]
    bad = tmp_path / "bad.jsonl"
    bad.write_text(CALLS[0].model_dump_json() + '\n\n{"call_id": 3}\n')
    with pytest.raises(TraceInputError, match=r"bad.jsonl:3: not a ModelCall"):
        load_rollout(bad)
    (tmp_path / "empty").mkdir()
    with pytest.raises(TraceInputError, match=r"no calls\.jsonl"):
        load_rollout(tmp_path / "empty")


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(Path(sys.executable).parent / "harnessrl"), *args], capture_output=True, text=True, timeout=120
    )


def test_cli_show_and_stats(tmp_path: Path) -> None:
    d = _write_rollout(tmp_path / "r", CALLS)
    out = tmp_path / "tree.html"
    res = _cli("tree", "show", str(d), "--html", str(out), "-o", "trace.keep_subagents=true")
    assert res.returncode == 0, res.stderr
    assert (
        res.stdout.splitlines()[1]
        == "nodes 6 (kept 5)  live leaves 2  dead leaves 1  retokenized 0  merged duplicates 0"
    )
    assert res.stdout.splitlines()[-1] == f"wrote {out}"
    assert out.read_text().startswith("<!doctype html>")
    res = _cli("tree", "stats", str(d), str(d / "calls.jsonl"))
    assert res.returncode == 0, res.stderr
    agg = json.loads(res.stdout)["aggregate"]
    assert (agg["rollouts"], agg["calls"], agg["tokens_per_call"], agg["tokens_unique"]) == (2, 8, 44, 14)
    res = _cli("tree", "show", str(tmp_path / "missing"))
    assert res.returncode == 2
    assert "no such rollout directory or calls file" in res.stderr
    res = _cli("tree", "show", str(d), "-o", "trace.max_live_leaves=many")
    assert res.returncode == 2
    assert "trace.max_live_leaves" in res.stderr


def test_trace_never_imports_torch() -> None:
    assert_torch_free(
        "import sys, harnessrl.trace, harnessrl.commands.trace\n"
        "from harnessrl.commands.trace import load_decoder\n"
        "assert load_decoder('qwen3')([151644, 872]) == '<|im_start|>user'\n"
    )


def test_stats_skips_non_rollout_paths(tmp_path: Path) -> None:
    """`tree stats runs/rollouts/*` also matches the rollout command's own summary.json: skipped, noted."""
    from typer.testing import CliRunner

    from harnessrl.cli import app

    d = _write_rollout(tmp_path / "r0001", CALLS)
    summary = tmp_path / "summary.json"
    summary.write_text('{"rollouts": 1}\n')
    (tmp_path / "logs").mkdir()
    res = CliRunner().invoke(app, ["tree", "stats", str(d), str(summary), str(tmp_path / "logs")])
    assert res.exit_code == 0, res.output
    assert res.stderr.splitlines() == [
        f"note: skipped {summary}: not a rollout folder or calls .jsonl file",
        f"note: skipped {tmp_path / 'logs'}: not a rollout folder or calls .jsonl file",
    ]
    agg = json.loads(res.stdout)["aggregate"]
    assert (agg["rollouts"], agg["calls"], agg["tokens_per_call"], agg["tokens_unique"]) == (1, 4, 22, 7)
    res = CliRunner().invoke(app, ["tree", "stats", str(summary)])
    assert res.exit_code == 2
    assert res.stderr.splitlines()[-1] == "error: no rollouts among the paths given"
    res = CliRunner().invoke(app, ["tree", "stats", str(d), str(tmp_path / "missing")])
    assert res.exit_code == 2
    assert "no such rollout directory or calls file" in res.stderr
