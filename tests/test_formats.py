"""One reader and one writer per run file (`harnessrl.formats`): each round-trips a real rollout folder
(written by the real runner: bubblewrap sandbox, real proxy, scripted engine, real checker) byte for
byte, and answers a hostile copy (a truncated line, a duplicated line, bytes that are not UTF-8) with
one typed error or a note, never a crash or a silent misreading. Every tool that reads the file reads
it through that reader, so they agree."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harnessrl.cli import app
from harnessrl.config import SandboxConfig, load_config
from harnessrl.evaluate.run import _header, policy_report
from harnessrl.evaluate.stats import Outcome
from harnessrl.evaluate.tables import write_report
from harnessrl.formats import FormatError
from harnessrl.formats.calls import CALLS_FILE, append_call, read_calls, write_calls
from harnessrl.formats.eval_report import EVAL_FILE, read_eval
from harnessrl.formats.metrics import METRICS_FILE, read_metrics, truncate_metrics
from harnessrl.formats.rollout_dir import ROLLOUT_FILE, read_rollout, read_rollout_head, write_rollout
from harnessrl.formats.rollout_summary import SUMMARY_FILE, read_summary, summarize, write_summary
from harnessrl.proxy.server import ProxyServer
from harnessrl.proxy.testing import scripted_deps
from harnessrl.report.runs import load_run
from harnessrl.rollout import RolloutJob, RolloutRunner, RunnerSettings
from harnessrl.rollout.testing import checked_task, curl_call
from harnessrl.trace.load import TraceInputError, load_rollout
from harnessrl.train.metrics import MetricsSink
from harnessrl.types import Rollout, RolloutStatus

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")

CHECK = """
import json, sys
from pathlib import Path
def main():
    ok = (Path(sys.argv[1]) / "out.txt").is_file()
    print(json.dumps({"exists": float(ok)}))
if __name__ == "__main__":
    main()
"""
CURL = curl_call()


@pytest.fixture
async def real_rollout(tmp_path: Path) -> tuple[Rollout, Path]:
    """One finished rollout with two model calls, written by the real runner: (its record, its folder)."""
    task = checked_task("t0", "write out.txt", CHECK, source=str(tmp_path))
    settings = RunnerSettings(out_dir=tmp_path / "runs", timeout_s=30.0, sandbox=SandboxConfig(pool_size=0))
    async with ProxyServer(scripted_deps(["hi\u2028there", "bye"]), port=0) as server:
        runner = RolloutRunner(server.deps.sessions, ("127.0.0.1", server.port), settings)
        try:
            command = f"{CURL} && {CURL} && printf hi > out.txt"
            rollout = await runner.run(RolloutJob(task, "shell", "r0", options={"command": command}))
        finally:
            await runner.close()
    assert rollout.status is RolloutStatus.OK and len(rollout.calls) == 2
    return rollout, tmp_path / "runs" / "r0"


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def test_calls_jsonl_round_trips_a_real_folder(real_rollout: tuple[Rollout, Path], tmp_path: Path) -> None:
    rollout, rdir = real_rollout
    calls = read_calls(rdir / CALLS_FILE)
    assert calls == rollout.calls
    assert calls[0].text == "hi\u2028there"  # a line separator inside a string is not a line break
    copy = tmp_path / "copy.jsonl"
    write_calls(copy, calls)
    assert copy.read_bytes() == (rdir / CALLS_FILE).read_bytes()
    journal = tmp_path / "journal.jsonl"
    for call in calls:
        append_call(journal, call)
    assert journal.read_bytes() == copy.read_bytes()
    # `tree` and `calls show` read it through the same reader
    assert load_rollout(rdir).calls == calls
    shown = CliRunner().invoke(app, ["calls", "show", str(rdir / CALLS_FILE)])
    assert shown.exit_code == 0 and "(2 calls)" in shown.output


def test_calls_jsonl_hostile_copies(real_rollout: tuple[Rollout, Path], tmp_path: Path) -> None:
    rollout, rdir = real_rollout
    first, second = _lines(rdir / CALLS_FILE)
    # duplicated line, and a call journalled again after a change: each call once, in its first place,
    # as its last line has it
    updated = rollout.calls[0].model_copy(update={"partial": True})
    dup = tmp_path / "dup.jsonl"
    dup.write_bytes(first + first + second + updated.model_dump_json().encode() + b"\n")
    assert read_calls(dup) == [updated, rollout.calls[1]]
    # truncated last line (a kill mid-write): a typed error naming file and line
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes(first + second[: len(second) // 2])
    with pytest.raises(FormatError, match=rf"^{cut}:2: not a ModelCall \(<line>: "):
        read_calls(cut)
    with pytest.raises(TraceInputError, match=rf"{cut}:2: not a ModelCall"):
        load_rollout(cut)
    # not UTF-8
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(first + b'{"call_id": "\xff\xfe"}\n')
    with pytest.raises(FormatError, match=rf"^{bad}: not UTF-8 \(byte {len(first) + 13}\)$"):
        read_calls(bad)
    shown = CliRunner().invoke(app, ["calls", "show", str(bad)])
    assert shown.exit_code == 1 and f"error: {bad}: not UTF-8" in shown.output


def test_rollout_json_round_trips_a_real_folder(real_rollout: tuple[Rollout, Path], tmp_path: Path) -> None:
    rollout, rdir = real_rollout
    back = read_rollout(rdir)
    assert back == rollout
    head = json.loads((rdir / ROLLOUT_FILE).read_text())
    assert head["n_calls"] == 2 and "calls" not in head
    assert read_rollout_head(rdir) == rollout.model_copy(update={"calls": []})
    again = tmp_path / "again"
    again.mkdir()
    write_rollout(again, back)
    for name in (ROLLOUT_FILE, CALLS_FILE):
        assert (again / name).read_bytes() == (rdir / name).read_bytes(), name
    # the report reads the same head
    shutil.copytree(rdir, tmp_path / "run" / "rollouts" / "r0", symlinks=True)
    run = load_run(tmp_path / "run")
    assert [(h.rollout_id, h.status, h.reward) for h in run.rollouts] == [("r0", "ok", 1.0)]


def test_rollout_summary_round_trip_and_hostile_copies(
    real_rollout: tuple[Rollout, Path], tmp_path: Path
) -> None:
    rollout, _ = real_rollout
    failed = rollout.model_copy(update={"status": RolloutStatus.TIMEOUT, "reward": None, "calls": []})
    summary = summarize([rollout, failed])
    assert summary == {
        "rollouts": 2,
        "status": {"ok": 1, "timeout": 1},
        "mean_reward_ok": 1.0,
        "calls": 2,
        "output_tokens": sum(len(c.output_ids) for c in rollout.calls),
    }
    path = write_summary(tmp_path, summary)
    assert path == tmp_path / SUMMARY_FILE
    assert read_summary(path) == summary
    for field, value, what in (
        ("calls", True, "calls is not a count"),
        ("status", {"ok": "1"}, "status is not an object of counts per status"),
        ("mean_reward_ok", "1.0", "mean_reward_ok is not a number or null"),
    ):
        bad = tmp_path / f"bad-{field}.json"
        bad.write_text(json.dumps({**summary, field: value}))
        with pytest.raises(FormatError, match=rf"^{bad}: {what}$"):
            read_summary(bad)


def test_rollout_folder_hostile_copies(real_rollout: tuple[Rollout, Path], tmp_path: Path) -> None:
    rollout, rdir = real_rollout
    lines = _lines(rdir / ROLLOUT_FILE)
    status = next(i for i, line in enumerate(lines) if line.startswith(b'  "status": '))

    def copy(name: str, head: bytes) -> Path:
        folder = tmp_path / name
        shutil.copytree(rdir, folder, symlinks=True)
        (folder / ROLLOUT_FILE).write_bytes(head)
        return folder

    # a duplicated line inside the object: the same key twice, the same value
    dup = copy("dup", b"".join(lines[: status + 1] + lines[status:]))
    assert read_rollout(dup) == rollout
    cut = copy("cut", b"".join(lines)[:40])
    with pytest.raises(FormatError, match=rf"^{cut / ROLLOUT_FILE}: not JSON \("):
        read_rollout(cut)
    bad = copy("bad", b"".join(lines).replace(b'"r0"', b'"r\xff"', 1))
    with pytest.raises(FormatError, match=rf"^{bad / ROLLOUT_FILE}: not UTF-8 \(byte \d+\)$"):
        read_rollout(bad)
    # a folder whose calls.jsonl was cut: the folder reader fails the same way the calls reader does
    cut_calls = copy("cut-calls", b"".join(lines))
    (cut_calls / CALLS_FILE).write_bytes(_lines(rdir / CALLS_FILE)[0][:30])
    with pytest.raises(FormatError, match=rf"^{cut_calls / CALLS_FILE}:1: not a ModelCall"):
        read_rollout(cut_calls)
    # the report shows the good ones and leaves the hostile heads out (it never fails on a run)
    runs = tmp_path / "run" / "rollouts"
    runs.mkdir(parents=True)
    for folder in (dup, cut, bad):
        shutil.move(folder, runs / folder.name)
    assert [(h.folder.name, h.status) for h in load_run(tmp_path / "run").rollouts] == [("dup", "ok")]


RECORDS = [
    {"step": 0, "reward": {"mean": 0.25, "std": 0.5}, "status": {"ok": 4}},
    {"step": 1, "reward": {"mean": 0.5, "std": 0.5}, "status": {"ok": 3, "timeout": 1}},
    {"step": 2, "reward": {"mean": 0.75, "std": 0.25}, "status": {"ok": 4}},
]


def test_metrics_jsonl_round_trip_and_hostile_copies(tmp_path: Path) -> None:
    (tmp_path / "run").mkdir()
    sink = MetricsSink(tmp_path / "run")
    for record in RECORDS:
        sink.write(record)
    path = tmp_path / "run" / METRICS_FILE
    assert read_metrics(path) == (RECORDS, [])
    first, second, third = _lines(path)
    assert first == json.dumps(RECORDS[0], sort_keys=True).encode() + b"\n"
    hostile = tmp_path / "hostile.jsonl"
    again = {**RECORDS[1], "reward": {"mean": 0.625, "std": 0.5}}
    hostile.write_bytes(
        first
        + b"\xff\xfe not utf-8\n"
        + second
        + second
        + json.dumps(again).encode()
        + b"\n"
        + third[: len(third) // 2]
    )
    records, notes = read_metrics(hostile)
    assert records == [RECORDS[0], again]
    assert notes == [
        f"{hostile}:2: not UTF-8, skipped",
        f"{hostile}:4: step 1 logged again, this line kept",
        f"{hostile}:5: step 1 logged again, this line kept",
        f"{hostile}:6: not JSON, skipped",
    ]
    assert read_metrics(tmp_path / "missing.jsonl") == ([], [])
    # a resumed run keeps the steps before its checkpoint, byte for byte, and drops what is not a record
    assert truncate_metrics(hostile, 2) == 2
    assert hostile.read_bytes() == first + json.dumps(again, sort_keys=True).encode() + b"\n"
    assert truncate_metrics(tmp_path / "fresh.jsonl", 0) == 0
    assert (tmp_path / "fresh.jsonl").read_bytes() == b""


def test_eval_json_round_trip_and_hostile_copies(tmp_path: Path) -> None:
    outcomes = [
        Outcome("t0", "c", "shell", run, run, "ok", 1.0 - run, 1.0 - run, run == 0, f"e-t0-shell-r{run}")
        for run in range(2)
    ]
    cfg = load_config(overrides=["eval.runs=2"])
    report = {
        "config": _header(cfg, [], ["shell"]),
        "policies": {"default": policy_report(cfg, outcomes)},
        "outcomes": [o.as_dict() for o in outcomes],
    }
    paths = write_report(report, tmp_path / "eval")
    assert paths["json"] == tmp_path / "eval" / EVAL_FILE
    assert read_eval(paths["json"]) == json.loads(json.dumps(report))
    lines = _lines(paths["json"])
    runs = next(i for i, line in enumerate(lines) if line.startswith(b'    "runs": '))
    dup = tmp_path / "dup.json"
    dup.write_bytes(b"".join(lines[: runs + 1] + lines[runs:]))
    assert read_eval(dup) == read_eval(paths["json"])
    cut = tmp_path / "cut.json"
    cut.write_bytes(b"".join(lines)[:50])
    with pytest.raises(FormatError, match=rf"^{cut}: not JSON \("):
        read_eval(cut)
    bad = tmp_path / "bad.json"
    bad.write_bytes(b'{"runs": "\xff"}\n')
    with pytest.raises(FormatError, match=rf"^{bad}: not UTF-8 \(byte 10\)$"):
        read_eval(bad)
    listed = tmp_path / "list.json"
    listed.write_text("[1, 2]\n")
    with pytest.raises(FormatError, match=rf"^{listed}: not a JSON object$"):
        read_eval(listed)


def test_readers_refuse_json_past_the_decoders_limits(tmp_path: Path) -> None:
    """A file nested 5,000 deep or holding a 5,000-digit integer is one FormatError (or a skipped
    metrics line), never RecursionError / ValueError: the readers use the one untrusted-JSON decoder."""
    deep = "[" * 5000 + "]" * 5000
    (tmp_path / CALLS_FILE).write_text(deep + "\n")
    with pytest.raises(FormatError, match=r"calls.jsonl:1: not a ModelCall \(<line>: JSON nests deeper"):
        read_calls(tmp_path / CALLS_FILE)
    (tmp_path / ROLLOUT_FILE).write_text('{"n": ' + "7" * 5000 + "}")
    with pytest.raises(FormatError, match=r"rollout.json: JSON holds an integer of 5000 digits"):
        read_rollout_head(tmp_path)
    (tmp_path / METRICS_FILE).write_text(deep + '\n{"step": 1, "loss": 0.5}\n')
    records, notes = read_metrics(tmp_path / METRICS_FILE)
    assert [r["step"] for r in records] == [1]
    assert notes == [f"{tmp_path / METRICS_FILE}:1: not JSON, skipped"]
