"""Experiment trackers (`report.trackers`): what `train` (MetricsSink) and `eval` (write_report) log,
read back by each library's own reader: our TensorBoard reader and TensorBoard's, wandb's offline run
file (its `Record` protobuf; wandb 0.31 has no Python reader of offline runs, its core reads them in
Go, so the test undoes the file's LevelDB-log framing), mlflow's `MlflowClient` on the file store,
trackio's `SQLiteStorage` and `Api`.

Each tracker runs in a subprocess (its own service processes, its own `TRACKIO_DIR`, nothing left in
this process) that writes through our code, then reads back through the library and prints JSON.
A tracker whose extra is not installed is skipped, with the command that installs it.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from harnessrl.config import ConfigError, TrackingConfig, load_config
from harnessrl.report.tbevents import read_scalars, read_texts
from harnessrl.report.trackers import TrackerError, open_trackers, require

REPO = Path(__file__).resolve().parents[1]

WRITE = """
import json, sys
from pathlib import Path
from harnessrl.config import TrackingConfig
from harnessrl.evaluate.tables import write_report
from harnessrl.evaluate.stats import Outcome, summarize
from harnessrl.train.metrics import MetricsSink

out, tracker = Path(sys.argv[1]), sys.argv[2]
tracking = TrackingConfig(report_to=[tracker], project="hrl-test")
(out / "train").mkdir(parents=True)
sink = MetricsSink(out / "train", tracking, {"train": {"lr": 1e-6, "steps": 2}})
sink.write({"step": 0, "reward": {"mean": 0.5, "std": 0.5}, "groups": {"informative": 1}})
sink.write({"step": 1, "reward": {"mean": 0.75, "std": 0.25}, "groups": {"informative": 2}})
sink.close()
outs = [Outcome("t1", "c", "codex", r, r, "ok", 1.0, 1.0, r == 0) for r in range(2)]
report = {
    "config": {"num_tasks": 1, "tasks": "t", "split": None, "harnesses": ["codex"], "runs": 2,
               "pass_threshold": 1.0, "engine": "scripted", "sampling": {"temperature": 1.0}, "seed": 0},
    "policies": {"a": {"summary": summarize(outs, 2)}},
    "outcomes": [dict(o.as_dict(), policy="a") for o in outs],
}
write_report(report, out / "eval", tracking, {"eval": {"runs": 2}})
"""

READ = {
    "mlflow": """
from mlflow.tracking import MlflowClient
got = {}
for kind in ("train", "eval"):
    client = MlflowClient(tracking_uri=(out / kind / "mlruns").resolve().as_uri())
    exp = client.get_experiment_by_name("hrl-test")
    (run,) = client.search_runs([exp.experiment_id])
    rid = run.info.run_id
    keys = ["reward/mean", "groups/informative"] if kind == "train" else ["pass1/a", "se/a"]
    got[kind] = {
        "name": run.info.run_name, "kind": run.data.tags["kind"], "params": run.data.params,
        "metrics": {k: [(m.step, m.value) for m in client.get_metric_history(rid, k)] for k in keys},
    }
    if kind == "eval":
        path = client.download_artifacts(rid, "tables/eval/policies.md", str(out / "dl"))
        got[kind]["table"] = open(path).read()
""",
    "trackio": """
import trackio
from trackio.sqlite_storage import SQLiteStorage
got = {}
for run in trackio.Api().runs("hrl-test"):
    logs = SQLiteStorage.get_logs("hrl-test", run.name)
    rows = [{k: v for k, v in row.items() if k != "timestamp"} for row in logs]
    got[run.name] = {"config": {k: v for k, v in run.config.items() if not k.startswith("_")}, "logs": rows}
""",
    "wandb": """
import glob, struct, zlib
from wandb.proto import wandb_internal_pb2 as pb

def records(path):
    buf = open(path, "rb").read()
    assert buf[:4] == b":W&B"
    i, pending = 7, b""
    while i + 7 <= len(buf):
        if 32768 - i % 32768 < 7:
            i += 32768 - i % 32768
            continue
        crc, length, kind = struct.unpack("<IHB", buf[i:i + 7])
        data = buf[i + 7:i + 7 + length]
        i += 7 + length
        if kind == 0:
            break
        assert zlib.crc32(bytes([kind]) + data) & 0xFFFFFFFF == crc
        pending += data
        if kind in (1, 4):
            rec = pb.Record()
            rec.ParseFromString(pending)
            pending = b""
            yield rec

got = {}
for kind in ("train", "eval"):
    (path,) = glob.glob(str(out / kind / "wandb" / "offline-run-*" / "run-*.wandb"))
    history, run = [], None
    for rec in records(path):
        which = rec.WhichOneof("record_type")
        if which == "history":
            row = {(i.key or "/".join(i.nested_key)): json.loads(i.value_json) for i in rec.history.item}
            history.append({k: v for k, v in row.items() if not k.startswith("_") or k == "_step"})
        elif which == "run":
            run = rec.run
    config = {u.key: json.loads(u.value_json) for u in run.config.update if u.key != "_wandb"}
    got[kind] = {"name": run.display_name, "job": run.job_type, "config": config, "history": history}
    if kind == "eval":
        table = [h for h in history if "eval/policies/path" in h][0]["eval/policies/path"]
        got[kind]["table"] = json.load(open(str(Path(path).parent / "files" / table)))
""",
}


def run_tracker(tracker: str, tmp_path: Path) -> dict[str, Any]:
    """Write in one process, read back in another once it has exited (wandb's service flushes the
    offline run file after `finish` returns)."""
    if importlib.util.find_spec(tracker) is None:
        pytest.skip(f"{tracker} is not installed: pip install 'harnessrl[{tracker}]'")
    out = tmp_path / "runs"
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"), TRACKIO_DIR=str(tmp_path / "trackio"))
    env.pop("WANDB_MODE", None)
    env["MLFLOW_ALLOW_FILE_STORE"] = "true"  # reading mlflow's file store asks for the opt-in too
    read = "import json, sys\nfrom pathlib import Path\nout = Path(sys.argv[1])\n" + READ[tracker]
    for code in (WRITE, read + "\nprint('GOT' + json.dumps(got))\n"):
        argv = [sys.executable, "-c", code, str(out), tracker]
        res = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300)
        assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    line = [x for x in res.stdout.splitlines() if x.startswith("GOT")][-1]
    return {"out": out, **json.loads(line[3:])}


RUN_NAMES = ("runs/train", "train", "runs/eval", "eval")
"""(name, kind) of the train run, then of the eval run, as each tracker records them."""


def run_names(train: dict[str, Any], ev: dict[str, Any], kind: str) -> tuple[str, str, str, str]:
    return (train["name"], train[kind], ev["name"], ev[kind])


EVAL_ROW = ["a", "0.500 +- 0.500 (0.000-1.000)", "1.000", "1.000 (k=2)", "0.000 (k=2)", "1x2", "ok 2"]


def test_mlflow_file_store_under_the_run_folder(tmp_path: Path) -> None:
    got = run_tracker("mlflow", tmp_path)
    train, ev = got["train"], got["eval"]
    assert run_names(train, ev, "kind") == RUN_NAMES
    assert train["params"]["train.lr"] == "1e-06" and train["params"]["train.steps"] == "2"
    assert train["metrics"] == {
        "reward/mean": [[0, 0.5], [1, 0.75]],
        "groups/informative": [[0, 1.0], [1, 2.0]],
    }
    assert ev["params"] == {"eval.runs": "2"}
    assert ev["metrics"] == {"pass1/a": [[0, 0.5]], "se/a": [[0, 0.5]]}
    assert "| " + " | ".join(EVAL_ROW) + " |" in ev["table"].splitlines()


def test_trackio_local_database(tmp_path: Path) -> None:
    got = run_tracker("trackio", tmp_path)
    train, ev = got["runs/train"], got["runs/eval"]
    assert train["config"] == {"train": {"lr": 1e-6, "steps": 2}}
    steps = [(r["step"], r.get("reward/mean"), r.get("groups/informative")) for r in train["logs"]]
    assert steps == [(0, 0.5, 1.0), (1, 0.75, 2.0)]
    assert ev["config"] == {"eval": {"runs": 2}}
    (scalars,) = [r for r in ev["logs"] if "pass1/a" in r]
    assert (scalars["pass1/a"], scalars["se/a"], scalars["step"]) == (0.5, 0.5, 0)
    (table,) = [r["eval/policies"] for r in ev["logs"] if "eval/policies" in r]
    header = ["policy", "Pass@1 +- se (range)", "mean score", "pass@k", "pass^k", "n", "statuses"]
    assert table["_value"] == [dict(zip(header, EVAL_ROW, strict=True))]
    assert (tmp_path / "trackio" / "hrl-test.db").is_file()


def test_wandb_offline_run_under_the_run_folder(tmp_path: Path) -> None:
    got = run_tracker("wandb", tmp_path)
    train, ev = got["train"], got["eval"]
    assert run_names(train, ev, "job") == RUN_NAMES
    assert train["config"] == {"train": {"lr": 1e-6, "steps": 2}}
    rows = [(h["_step"], h.get("reward/mean"), h.get("groups/informative")) for h in train["history"]]
    assert rows == [(0, 0.5, 1.0), (1, 0.75, 2.0)]
    assert ev["config"] == {"eval": {"runs": 2}}
    (scalars,) = [h for h in ev["history"] if "pass1/a" in h]
    assert (scalars["pass1/a"], scalars["se/a"]) == (0.5, 0.5)
    assert ev["table"]["data"] == [EVAL_ROW] and ev["table"]["columns"][0] == "policy"


def test_tensorboard_gets_scalars_config_and_tables(tmp_path: Path) -> None:
    with open_trackers(tmp_path, None, kind="eval", config={"eval": {"runs": 2}}) as t:
        t.scalars(0, {"pass1/a": 0.5})
        t.table("eval/policies", ["policy", "Pass@1"], [["a", "0.500"]])
    (events,) = (tmp_path / "tb").iterdir()
    assert read_scalars(events) == {"pass1/a": [(0, 0.5)]}
    texts = read_texts(events)
    assert texts["eval/policies"] == [(0, "| policy | Pass@1 |\n|---|---|\n| a | 0.500 |")]
    assert json.loads(texts["config"][0][1]) == {"eval": {"runs": 2}}
    ea = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")
    acc = ea.EventAccumulator(str(tmp_path / "tb"))
    acc.Reload()
    assert [(e.step, e.value) for e in acc.Scalars("pass1/a")] == [(0, 0.5)]
    (table,) = acc.Tensors("eval/policies")
    assert table.tensor_proto.string_val == [b"| policy | Pass@1 |\n|---|---|\n| a | 0.500 |"]
    assert acc.summary_metadata["eval/policies"].plugin_data.plugin_name == "text"


def test_a_tracker_that_is_not_installed_is_a_config_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(ConfigError, match=r"tracking\.report_to"):
        load_config(None, ['tracking.report_to=["neptune"]'])
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(TrackerError, match=r"pip install 'harnessrl\[mlflow\]'"):
        require(TrackingConfig(report_to=["mlflow"]))


class Broken:
    """A tracker whose client fails while logging (a full disk, a dead service)."""

    def scalars(self, step: int, values: dict[str, float]) -> None:
        raise OSError("disk full")

    def table(self, name: str, header: list[str], rows: list[list[str]], step: int) -> None:
        raise AssertionError("dropped trackers get no more calls")

    def close(self) -> None:
        raise AssertionError("dropped trackers get no more calls")


def test_a_tracker_that_fails_is_dropped_and_the_others_go_on(tmp_path: Path) -> None:
    from harnessrl.report.trackers import TensorBoard, Trackers

    trackers = Trackers([Broken(), TensorBoard(tmp_path, {})])
    with pytest.warns(UserWarning, match=r"Broken tracker failed \(OSError\('disk full'\)\); it is dropped"):
        trackers.scalars(0, {"a": 1.0})
    trackers.scalars(1, {"a": 2.0})
    trackers.table("t", ["x"], [["1"]])
    trackers.close()
    (events,) = (tmp_path / "tb").iterdir()
    assert read_scalars(events) == {"a": [(0, 1.0), (1, 2.0)]} and list(read_texts(events)) == ["t"]
