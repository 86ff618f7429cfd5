"""`harnessrl train` across ranks (`train/ranks.py`): one RL loop on rank 0, the FSDP2 update on every rank.

The end-to-end test runs the real loop under `torch.distributed.run` with 2 gloo ranks on CPU: rank 0
runs the rollouts (bubblewrap sandboxes, the `shell` harness making one curl call, the real proxy, a
scripted engine scoring with the policy's weights in bfloat16), rank 1 only its FSDP shard. The model
is a small Qwen3 with the real tokenizer and untied embeddings (FSDP refuses tied ones). Rollouts are
exact replays: with `rollout.concurrency = 1` the calls come in schedule order and call k answers
"yes" (reward 1) or "no thanks" (reward 0) by k's parity, so each GRPO group has a +1 and a -1 and
every run of a step sees the same trees. About 60 s on 2 cores at load 7 (two torchrun start-ups).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

from harnessrl.config import Config, ConfigError, TrainerConfig
from harnessrl.formats.checkpoints import read_checkpoint_meta
from harnessrl.formats.metrics import read_metrics
from harnessrl.rl.packing import layout_tree, prefix_order
from harnessrl.rl.synthetic import rollout_tree
from harnessrl.train.ranks import check_size, launch_argv, split_by_tokens

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")

CHECK = """
import json, sys
from pathlib import Path
def main():
    reply = json.loads((Path(sys.argv[1]) / "reply.json").read_text())
    said = reply["choices"][0]["message"]["content"]
    print(json.dumps({"score": 1.0 if said.strip() == "yes" else 0.0}))
if __name__ == "__main__":
    main()
"""

CURL = (
    'curl -sf -X POST "$HARNESSRL_BASE_URL/v1/chat/completions" -H "content-type: application/json" '
    '-H "authorization: Bearer $HARNESSRL_API_KEY" '
    '-d \'{"model":"m","max_tokens":6,"messages":[{"role":"user","content":"yes or no?"}]}\' > reply.json'
)

DRIVER = """
import asyncio, json, os, sys
from pathlib import Path
import torch
torch.set_num_threads(1)
sys.path.insert(0, {tests!r})
from test_train_ranks import make_tasks, replay_engine
from harnessrl.config import Config
from harnessrl.train.loop import train

cfg = Config.model_validate(json.loads(Path(sys.argv[1]).read_text()))
rank = int(os.environ.get("RANK", "0"))
engine = replay_engine(cfg.engine.model) if rank == 0 else None  # the other ranks build none
if rank > 0:  # the other ranks must never start rollouts or an engine
    import harnessrl.engines, harnessrl.rollout.session
    def refuse(*args, **kwargs):
        raise AssertionError(f"rank {{rank}} started rollouts or an engine")
    harnessrl.engines.build_engine = refuse
    harnessrl.rollout.session.RolloutStack.from_config = refuse
fault = os.environ.get("FAULT", "")  # test_a_failed_rank_ends_the_job
if fault == "kill-rank-1" and rank == 1:
    import signal, harnessrl.train.ranks as ranks
    def die(trainer, order):
        print("rank 1 dies", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    ranks.carry_out = die
if fault == "rank-0-fails" and rank == 0:
    from harnessrl.train.loop import TrainLoop
    def broken(self, record):
        raise OSError("disk full")
    TrainLoop.write_metrics = broken
records = asyncio.run(train(cfg, make_tasks(), engine=engine))
assert (len(records) > 0) == (rank == 0)
"""


def make_tasks() -> list[Any]:
    from harnessrl.types import Checker, Task, TaskFile

    reward = Checker(files=[TaskFile(path="reward/check.py", content=CHECK)])
    readme = [TaskFile(path="README.md", content="task\n")]
    return [Task(id=f"t{i}", prompt=f"answer {i}", workspace=readme, checker=reward) for i in range(2)]


def replay_engine(model: str) -> Any:
    """A scripted engine scoring with `model` in bfloat16 (real log-probs a little off the float32
    trainer's, as a real engine's are, so the loss is not 0; updated with the trainer's weights) whose
    call k answers "yes" or "no thanks" by k's parity."""
    from harnessrl.chat.format import ChatFormat
    from harnessrl.engines.models import load_model, load_tokenizer
    from harnessrl.engines.scripted import Script, ScriptedEngine

    class Alternating(ScriptedEngine):
        def select(self, prompt_ids: list[int]) -> tuple[int, int]:
            return (self.calls - 1) % 2, 0

    fmt = ChatFormat(load_tokenizer(model))
    scripts = [Script(turns=["yes"]), Script(turns=["no thanks"])]
    return Alternating(fmt, scripts, model=load_model(model, "bfloat16", "cpu"))


def untied_model(folder: Path) -> Path:
    """A small random Qwen3 (real vocabulary, untied embeddings) with the Qwen3 tokenizer, as a folder."""
    from harnessrl.chat.tokenizers import qwen3_tokenizer_dir
    from harnessrl.train.causal_lm import tiny_causal_lm

    model = tiny_causal_lm(vocab_size=151936, hidden_size=32, layers=2, heads=4, kv_heads=2, seed=5)
    model.save_pretrained(folder)
    for f in qwen3_tokenizer_dir().iterdir():
        if f.is_file():
            shutil.copy(f, folder / f.name)
    return folder


def run_config(model: Path, out: Path, *, fsdp: bool = True, **train: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "lr": 1e-2, "steps": 2, "seed": 3, "out_dir": str(out), "tasks_per_step": 2, "group_size": 2,
        "harnesses": ["shell"], "harness_options": {"shell": {"command": CURL}},
        "save_every": 1, "keep_checkpoints": 0,
        "trainer": {
            "fsdp": fsdp, "token_budget": 64, "warmup_steps": 1, "schedule": "cosine", "total_steps": 2,
        },
    }  # fmt: skip
    base.update(train)
    return {
        "engine": {"type": "scripted", "model": str(model), "sampling": {"max_tokens": 6}},
        "rollout": {"concurrency": 1, "timeout_s": 120.0},
        "train": base,
    }


def torchrun(tmp: Path, name: str, cfg: dict[str, Any], fault: str = "") -> subprocess.Popen[str]:
    """The driver on 2 ranks under `torch.distributed.run` (started, not waited for: see `finish`)."""
    (tmp / f"{name}.json").write_text(json.dumps(cfg))
    script = tmp / "driver.py"
    script.write_text(DRIVER.format(tests=str(Path(__file__).parent)))
    cmd = [*launch_argv(2, [])[:-2], str(script), str(tmp / f"{name}.json")]
    env = dict(os.environ, OMP_NUM_THREADS="1", FAULT=fault)
    out = subprocess.PIPE
    return subprocess.Popen(cmd, env=env, stdout=out, stderr=out, text=True, start_new_session=True)


@contextlib.contextmanager
def ending(procs: list[subprocess.Popen[str]]) -> Iterator[list[subprocess.Popen[str]]]:
    """Whatever happens, no launch of ours outlives the test (each is its own process group)."""
    try:
        yield procs
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()


def finish(proc: subprocess.Popen[str]) -> str:
    """Its stdout, once it exited 0."""
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, out[-2000:] + err[-4000:]
    return out


def appears(path: Path, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 300
    while not path.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert path.exists(), f"{path} never appeared"


def sharded_weights(path: Path, model: Path) -> tuple[dict[str, torch.Tensor], Any]:
    """A checkpoint of 2 FSDP ranks read whole by one plain process (`Trainer.load`)."""
    from harnessrl.train.build import build_trainer

    cfg = Config.model_validate(run_config(model, path.parent, fsdp=False))
    trainer = build_trainer(cfg)
    trainer.load(path)
    return trainer.weights(), trainer


def trainer_line(out: Path, step: int) -> dict[str, Any]:
    records, _ = read_metrics(out / "metrics.jsonl")
    (rec,) = [r for r in records if r["step"] == step]
    return rec


def max_diff(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    assert a.keys() == b.keys()
    return max(float((a[k] - b[k]).abs().max()) for k in a)


@needs_bwrap
def test_two_ranks_step_equals_one_rank_and_resumes_exactly(tmp_path: Path) -> None:
    from harnessrl.train.build import build_trainer
    from harnessrl.train.loop import train

    model = untied_model(tmp_path / "model")
    t0 = time.perf_counter()
    with ending([]) as procs:
        procs.append(two := torchrun(tmp_path, "two", run_config(model, tmp_path / "two")))

        # Meanwhile, the same step in one process from the same start (and its own rollouts).
        cfg1 = Config.model_validate(run_config(model, tmp_path / "one", steps=1, fsdp=False))
        one_trainer = build_trainer(cfg1)
        asyncio.run(train(cfg1, make_tasks(), engine=replay_engine(str(model)), trainer=one_trainer))

        # As soon as the 2 ranks saved step 1: resume from that sharded checkpoint in 2 new ranks.
        ckpts = tmp_path / "two" / "checkpoints"
        first = ckpts / "step-00000001"
        appears(first, two)
        resumed_out = tmp_path / "resumed"
        shutil.copytree(first, resumed_out / "checkpoints" / first.name)
        procs.append(resumed := torchrun(tmp_path, "resumed", run_config(model, resumed_out, resume=True)))
        two_out = finish(two)
        two_s = time.perf_counter() - t0
        finish(resumed)

    assert sorted(p.name for p in ckpts.iterdir()) == ["step-00000001", "step-00000002"]
    assert read_checkpoint_meta(first) == {"step": 1, "data_position": 1, "sharded_ranks": 2}
    assert sorted(p.name for p in first.iterdir()) == [
        "meta.json",
        "rng-0.pt",
        "rng-1.pt",
        "shards",
        "state.pt",
    ]
    # Rank 0 alone ran the rollouts and logged: 2 steps x 4 rollouts, one line per step.
    assert len([p for p in (tmp_path / "two" / "rollouts").iterdir() if not p.name.startswith(".")]) == 8
    assert two_out.count("step 1/2 |") == 1 and two_out.count("step 2/2 |") == 1
    step0 = trainer_line(tmp_path / "two", 0)
    assert step0["status"] == {"ok": 4} and step0["reward"]["mean"] == 0.5 and step0["trained"]

    # 2 ranks = 1 rank: same loss, same weights.
    step0_one = trainer_line(tmp_path / "one", 0)
    # The loss sums O(1) terms that cancel (GRPO's +1 and -1) to ~2e-5: float32 sums in another
    # order move it by ~5e-8.
    for key in ("loss/total", "grad_norm", "trained_tokens"):
        assert step0_one["trainer"][key] == pytest.approx(step0["trainer"][key], rel=1e-5, abs=2e-7), key
    # Each rank lays the shared prompt out once (`trainer.share_prefixes`): more tokens over 2 ranks.
    assert step0_one["trainer"]["tokens"] < step0["trainer"]["tokens"]
    assert abs(step0["trainer"]["loss/total"]) > 1e-6
    w_two, _ = sharded_weights(first, model)
    w_one = one_trainer.weights()
    diff = max_diff(w_one, w_two)
    assert diff < 1e-4
    moved = max_diff(w_one, build_trainer(cfg1).weights())
    assert moved > 1e-3  # the step did move the weights

    # The resumed ranks ran step 2 exactly as the uninterrupted ones.
    again, before = trainer_line(resumed_out, 1), trainer_line(tmp_path / "two", 1)
    assert again["trainer"] == before["trainer"] and again["optimizer_step"] == 2
    w_a, tr_a = sharded_weights(ckpts / "step-00000002", model)
    w_b, tr_b = sharded_weights(resumed_out / "checkpoints" / "step-00000002", model)
    assert max_diff(w_a, w_b) == 0.0
    sa, sb = tr_a.optimizer.state_dict()["state"], tr_b.optimizer.state_dict()["state"]
    assert all(torch.equal(sa[i]["exp_avg_sq"], sb[i]["exp_avg_sq"]) for i in sa)
    print(
        f"2 ranks, 2 steps: {two_s:.1f} s (step 1's update {step0['time']['train']:.2f} s); "
        f"1 rank: update {step0_one['time']['train']:.2f} s; "
        f"max |w1 - w2| {diff:.2e}, "
        f"loss {step0['trainer']['loss/total']:.6e} vs {step0_one['trainer']['loss/total']:.6e}"
    )


@pytest.mark.slow
@needs_bwrap
@pytest.mark.parametrize("fault", ["kill-rank-1", "rank-0-fails"])
def test_a_failed_rank_ends_the_job(tmp_path: Path, fault: str) -> None:
    """Rank 1 SIGKILLed when step 1's order reaches it (rank 0 waits in that step's collectives), or
    rank 0 failing after step 1 (between orders): the job ends, non-zero, saying why; nothing hangs
    until a collective timeout."""
    model = untied_model(tmp_path / "model")
    with ending([]) as procs:
        procs.append(job := torchrun(tmp_path, "job", run_config(model, tmp_path / "job"), fault))
        out, err = job.communicate(timeout=240)
    assert job.returncode != 0
    if fault == "kill-rank-1":
        assert "rank 1 dies" in out
        assert "local_rank: 1" in err and "Signal 9 (SIGKILL)" in err  # torchrun's report
    else:
        assert "OSError: disk full" in err
        assert "RankError: rank 0 ended the run: OSError: disk full" in err
    assert not (tmp_path / "job" / "checkpoints" / "step-00000002").exists()


SCORED = """
import json, sys
from pathlib import Path
p = Path(sys.argv[1]) / "score.txt"
print(json.dumps({"score": int(p.read_text().split()[0][:8], 16) / 0xFFFFFFFF if p.is_file() else 0.0}))
"""


@pytest.mark.slow
@needs_bwrap
def test_cli_world_size_starts_replicated_ranks(tmp_path: Path) -> None:
    """`harnessrl train -o train.trainer.world_size=2` starts itself under torchrun; without `fsdp`
    the ranks hold replicas (tiny-qwen3 ties its embeddings) and rank 0 writes one plain checkpoint.
    The embedded engine samples; the score is the md5 of the session token (a GRPO group varies)."""
    varied = f'{CURL} && printf %s "$HARNESSRL_API_KEY" | md5sum > score.txt'
    files = [{"file_path": "reward/check.py", "content": SCORED}, {"file_path": "README.md", "content": "x"}]
    line = {"prompt": "write a score", "hook_code": "python3 reward/check.py /root/.openclaw/workspace"}
    lines = [dict(line, input_files=files, origin_template=f"---\nid: t{i}\n---") for i in range(2)]
    tasks = tmp_path / "train" / "tasks.jsonl"  # split "train", the folder's name
    tasks.parent.mkdir()
    tasks.write_text("".join(json.dumps(x) + "\n" for x in lines))
    out = tmp_path / "run"
    sets = {
        "engine.model": "tiny-qwen3", "engine.sampling.max_tokens": 6, "tasks.path": str(tasks),
        "train.categories": [], "train.harnesses": ["shell"], "train.harness_options.shell.command": varied,
        "train.steps": 1,
        "train.tasks_per_step": 2, "train.group_size": 2, "train.out_dir": str(out), "train.lr": 1e-2,
        "train.trainer.world_size": 2, "rollout.concurrency": 4,
    }  # fmt: skip
    args = [a for k, v in sets.items() for a in ("-o", f"{k}={json.dumps(v)}")]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    cmd = [sys.executable, "-m", "harnessrl", "train", *args]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    assert "starting 2 ranks: " in proc.stdout and "--nproc-per-node=2 -m harnessrl train" in proc.stdout
    assert proc.stdout.count("training tiny-qwen3 on 2 tasks") == 1 and proc.stdout.count("step 1/1 |") == 1
    records, _ = read_metrics(out / "metrics.jsonl")
    (rec,) = records
    assert rec["status"] == {"ok": 4} and rec["trained"] and rec["trainer"]["grad_norm"] > 0
    (ckpt,) = (out / "checkpoints").iterdir()
    assert read_checkpoint_meta(ckpt) == {"step": 1, "data_position": 1}
    assert sorted(p.name for p in ckpt.iterdir()) == ["meta.json", "state.pt"]


def test_split_by_tokens_balances_and_keeps_prompts_together() -> None:
    # 4 groups of 2 trees with one prompt each (a group's trees are copies here)
    groups = [0, 0, 1, 1, 2, 2, 3, 3]
    layouts = [
        layout_tree(rollout_tree(random.Random(g), vocab=50, leaves=1 + g % 3, prefix=6, group_id=f"g{g}"))
        for g in groups
    ]
    sizes = [L.num_tokens for L in layouts]
    assert sizes == [153, 153, 233, 233, 223, 223, 141, 141]
    order = prefix_order(layouts)
    assert order == [4, 5, 2, 3, 6, 7, 0, 1]
    assert split_by_tokens(layouts, 1) == [list(range(8))]
    for ranks, expected in ((2, [[2, 4, 5], [0, 1, 3, 6, 7]]), (3, [[4, 5], [2, 3, 6], [0, 1, 7]])):
        shares = split_by_tokens(layouts, ranks)
        assert shares == expected
        # runs of the prefix order (equal prompts together), each within one tree of an equal share
        assert [i for s in shares for i in sorted(s, key=order.index)] == order
        assert all(abs(sum(sizes[i] for i in s) - sum(sizes) / ranks) < max(sizes) for s in shares)
    assert split_by_tokens(layouts[:1], 2) == [[], [0]]  # a rank may get nothing (it pads: fsdp.py)
    assert split_by_tokens([], 2) == [[], []]


def test_world_size_must_match_the_launch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    assert check_size(TrainerConfig()) == 1
    with pytest.raises(ConfigError, match="needs torchrun"):
        check_size(TrainerConfig(world_size=2))
    monkeypatch.setenv("WORLD_SIZE", "4")
    assert check_size(TrainerConfig()) == check_size(TrainerConfig(world_size=4)) == 4
    with pytest.raises(ConfigError, match="torchrun started 4 ranks"):
        check_size(TrainerConfig(world_size=2))
    assert launch_argv(3, ["train", "-o", "x=1"]) == [
        sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=3",
        "-m", "harnessrl", "train", "-o", "x=1",
    ]  # fmt: skip
