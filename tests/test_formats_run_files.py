"""The JSON files a run writes besides the rollout folder, metrics and eval reports (`harnessrl.formats`):
an experiment stage's `stage.json`, the quickstart's and the ablation's summaries, `sft.json`, a
checkpoint's `meta.json` and a rollout's `reward.json`. Each is written by the code that writes it in a
run, read back equal, and answers a hostile copy (a duplicated line, a truncated file, bytes that are
not UTF-8, a field of the wrong type) with one `FormatError` naming the file, never a crash."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harnessrl.experiments.ablation_seeds import load_run
from harnessrl.experiments.stages import Stages, inputs_digest
from harnessrl.formats import FormatError
from harnessrl.formats.checkpoints import META_FILE, latest_checkpoint, read_checkpoint_meta
from harnessrl.formats.rollout_dir import REWARD_FILE, read_reward, write_reward
from harnessrl.formats.sft import SFT_FILE, read_sft, write_sft
from harnessrl.formats.stage import STAGE_FILE, StageRecord, read_stage
from harnessrl.formats.summaries import (
    ABLATION_FILE,
    QUICKSTART_FILE,
    read_ablation,
    read_quickstart,
    write_ablation,
    write_quickstart,
)
from harnessrl.types import Rollout, RolloutStatus


def hostile_copies(path: Path, read: Callable[[Path], Any], tmp: Path) -> None:
    """A duplicated line reads the same; a truncated copy, a byte that is not UTF-8 and a JSON list
    each raise one FormatError naming the copy (each copy in a folder of its own, under its name)."""
    data = path.read_bytes()
    lines = data.splitlines(keepends=True)

    def copy(case: str, content: bytes) -> Path:
        (tmp / case).mkdir(parents=True)
        (tmp / case / path.name).write_bytes(content)
        return tmp / case / path.name

    field = next(i for i, line in enumerate(lines) if line.rstrip().endswith(b",") and b": " in line)
    assert read(copy("dup", b"".join([*lines[: field + 1], *lines[field:]]))) == read(path)
    cut = copy("cut", data[: len(data) // 2])
    with pytest.raises(FormatError, match=rf"^{cut}: not JSON \("):
        read(cut)
    bad = copy("bad", b'{"x": "\xff"}\n')
    with pytest.raises(FormatError, match=rf"^{bad}: not UTF-8 \(byte 7\)$"):
        read(bad)
    listed = copy("list", b"[1, 2]\n")
    with pytest.raises(FormatError, match=rf"^{listed}: not a JSON object$"):
        read(listed)


def with_field(path: Path, tmp: Path, **fields: Any) -> Path:
    """A copy of the JSON object in `path` with `fields` replaced, in a folder of its own."""
    out = tmp / "field" / "-".join(fields) / path.name
    out.parent.mkdir(parents=True)
    out.write_text(json.dumps(json.loads(path.read_text()) | fields, indent=2))
    return out


async def test_stage_json_reuses_a_stage_and_runs_a_hostile_one_again(tmp_path: Path) -> None:
    lines: list[str] = []
    runs: list[Path] = []

    async def stage(folder: Path) -> dict[str, Any]:
        runs.append(folder)
        return {"paths": [str(folder / "a")], "n": 3}

    st = Stages(tmp_path / "exp", False, lines.append)
    first = await st.run("tasks", {"seed": 0}, stage)
    stamp = tmp_path / "exp" / "tasks" / STAGE_FILE
    record = read_stage(stamp)
    assert record == StageRecord(inputs_digest({"seed": 0}), record.seconds, first)
    assert await Stages(tmp_path / "exp", False, lines.append).run("tasks", {"seed": 0}, stage) == first
    assert len(runs) == 1 and lines[-1].startswith(f"[tasks] reused from {tmp_path / 'exp' / 'tasks'} (ran ")
    hostile_copies(stamp, read_stage, tmp_path / "hostile")
    with pytest.raises(FormatError, match=r"seconds is not a number of seconds$"):
        read_stage(with_field(stamp, tmp_path, seconds=True))
    with pytest.raises(FormatError, match=r"inputs is not an inputs digest$"):
        read_stage(with_field(stamp, tmp_path, inputs=[1]))
    stamp.write_bytes(stamp.read_bytes()[:20])  # a run killed while writing it: the stage runs again
    assert await Stages(tmp_path / "exp", False, lines.append).run("tasks", {"seed": 0}, stage) == first
    assert len(runs) == 2
    assert lines[-3].startswith(f"[tasks] {stamp}: not JSON (") and lines[-3].endswith(": running it again")
    assert read_stage(stamp).result == first


def test_quickstart_and_ablation_summaries(tmp_path: Path) -> None:
    summary = {
        "policies": {"base": {"pass1": 0.25, "per_run": [0.25]}},
        "seconds": {"tasks": 1.5},
        "heldout_tasks": 2,
        "sft": {"model": "m"},
        "paired": {"sft": {"baseline": "base", "difference": 0.5}},
    }
    path = write_quickstart(tmp_path, summary)
    assert path == tmp_path / QUICKSTART_FILE and read_quickstart(path) == summary
    hostile_copies(path, read_quickstart, tmp_path / "quickstart")
    with pytest.raises(FormatError, match=r"paired is not an object of paired differences$"):
        read_quickstart(with_field(path, tmp_path, paired=[]))

    ablation = {
        "policies": {"cold-start": {"summary": {"pass1": 0.5}}},
        "heldout_tasks": 6,
        "eval_configs": ["00100"],
        "out_of_space": ["codex"],
        "arms": {"oa-18": ["00000"]},
    }
    path = write_ablation(tmp_path, ablation)
    assert path == tmp_path / ABLATION_FILE and read_ablation(path) == ablation
    hostile_copies(path, read_ablation, tmp_path / "ablation")
    with pytest.raises(FormatError, match=r"eval_configs is not a list of names$"):
        read_ablation(with_field(path, tmp_path, eval_configs=["00100", 7]))
    run = tmp_path / "run"
    run.mkdir()
    (run / ABLATION_FILE).write_bytes(b'{"policies": {}, "eval_configs": "\xff"}')
    with pytest.raises(
        ValueError, match=rf"^{run}: no readable ablation.json .*: {run / ABLATION_FILE}: not UTF-8"
    ):
        load_run(run)


def test_sft_json(tmp_path: Path) -> None:
    result = {"log": [{"step": 1, "nll": 1.25, "heldout_nll": None}], "model": str(tmp_path / "model")}
    path = write_sft(tmp_path, result | {"dropped": {"failed": 1}})
    assert path == tmp_path / SFT_FILE and read_sft(path) == result | {"dropped": {"failed": 1}}
    hostile_copies(path, read_sft, tmp_path / "hostile")
    with pytest.raises(FormatError, match=r"model is not a model folder$"):
        read_sft(with_field(path, tmp_path, model=None))


def test_checkpoint_meta_written_by_the_trainer(tmp_path: Path) -> None:
    from harnessrl.train.checkpoint import TrainState, save_checkpoint

    folder = save_checkpoint(tmp_path / "ckpts", TrainState(step=3, data_position=7), {"model": {}})
    assert latest_checkpoint(tmp_path / "ckpts") == folder
    assert read_checkpoint_meta(folder) == {"step": 3, "data_position": 7}
    hostile_copies(folder / META_FILE, lambda p: read_checkpoint_meta(p.parent), tmp_path / "hostile")
    (folder / META_FILE).write_text('{"step": 3, "data_position": "7"}')
    with pytest.raises(FormatError, match=rf"^{folder / META_FILE}: data_position is not an integer$"):
        read_checkpoint_meta(folder)


def test_reward_json(tmp_path: Path) -> None:
    rollout = Rollout(
        rollout_id="r0", task_id="t0", harness="shell", status=RolloutStatus.OK, reward=0.5,
        reward_detail={"code": {"score": 0.5, "duration_s": 0.25}},
    )  # fmt: skip
    write_reward(tmp_path, rollout)
    assert read_reward(tmp_path) == {"reward": 0.5, "status": "ok", "detail": rollout.reward_detail}
    hostile_copies(tmp_path / REWARD_FILE, lambda p: read_reward(p.parent), tmp_path / "hostile")
    (tmp_path / REWARD_FILE).write_text('{"reward": "1.0", "status": "ok"}')
    with pytest.raises(FormatError, match=rf"^{tmp_path / REWARD_FILE}: reward is not a number or null$"):
        read_reward(tmp_path)
