"""Cold-start SFT on demonstrations made by the real white-box harness in its sandbox (scripted engine
replaying each task's reference), on tiny-qwen3: held-out demonstration NLL goes down, the trained
tokens are exactly the recorded ids, rollout folders give the same trees, and RL starts from the
exported model folder."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch

from harnessrl.config import Config
from harnessrl.report.tbevents import read_scalars, read_texts
from harnessrl.rollout.artifacts import read_rollout
from harnessrl.tasks import load_tasks
from harnessrl.tasks.generate import generate
from harnessrl.train.build import build_trainer
from harnessrl.train.loop import TrainLoop
from harnessrl.train.sft import demo_engine, rollout_dirs, select_trees, sft
from harnessrl.types import Task

pytestmark = [
    pytest.mark.slow,  # ~60 s idle: 8 sandboxed rollouts, 4 SFT steps, a PPO step
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed"),
]
HARNESS = "whitebox:00000"


def tasks(root: Path) -> list[Task]:
    generate(["count_matches", "create_file", "move_file"], 2, 0, root)
    return load_tasks(str(root / "train")).tasks


def config(out: Path) -> Config:
    cfg = Config()
    cfg.engine.type = "scripted"
    cfg.engine.model = "tiny-qwen3"
    cfg.rollout.timeout_s = 120
    cfg.sft.harness = HARNESS
    cfg.sft.out_dir = str(out)
    cfg.sft.steps = 4
    cfg.sft.batch_size = 4
    cfg.sft.lr = 3e-3
    cfg.sft.heldout_every = 3
    return cfg


async def test_sft_lowers_heldout_nll_and_rl_starts_from_it(tmp_path: Path) -> None:
    task_list = tasks(tmp_path / "tasks")
    cfg = config(tmp_path / "sft")
    result = await sft(cfg, task_list, echo=lambda _: None)
    assert (result["train_trees"], result["heldout_trees"], result["dropped"]) == (4, 2, {})
    nll = [rec["heldout_nll"] for rec in result["log"]]
    assert len(nll) == 5 and nll[-1] < nll[0] - 0.5, nll  # 4 steps: held-out NLL well down
    (events,) = (tmp_path / "sft" / "tb").iterdir()  # the same numbers as TensorBoard scalars
    logged = read_scalars(events)
    assert logged["sft/heldout_nll"] == [(s, pytest.approx(x, rel=1e-6)) for s, x in enumerate(nll)]
    assert [s for s, _ in logged["sft/nll"]] == [1, 2, 3, 4] and "config" in read_texts(events)

    # The trees are the demonstrations' recorded ids; read back from the folders they are identical.
    demos = [read_rollout(d) for d in rollout_dirs([tmp_path / "sft" / "demos"])]
    assert [r.status_label for r in demos] == ["ok"] * 6 and all(r.reward == 1.0 for r in demos)
    data = select_trees(demos, cfg)
    first = data.train[0]
    model_ids = [t for n in first.nodes for t, m in zip(n.tokens, n.model_mask, strict=True) if m]
    calls = next(r for r in demos if r.rollout_id == first.rollout_id).calls
    assert model_ids == [t for c in calls for t in c.output_ids]
    assert "echo ref-step" not in demo_engine(cfg, task_list, HARNESS).fmt.tokenizer.decode(
        [t for c in calls for t in c.output_ids]
    )  # clean demonstrations: the command itself, then "done"

    # RL starts from the exported model folder: the trainer holds exactly the SFT weights.
    rl = cfg.model_copy(deep=True)
    rl.engine.model = result["model"]
    rl.train.algorithm = "ppo"
    rl.train.steps, rl.train.tasks_per_step, rl.train.group_size = 1, 1, 2
    rl.train.harnesses = [HARNESS]
    rl.train.out_dir = str(tmp_path / "rl")
    trainer = build_trainer(rl)
    saved = torch.load(Path(result["checkpoint"]) / "state.pt", weights_only=False)["model"]
    assert all(torch.equal(v, saved[k]) for k, v in trainer.model.state_dict().items())
    engine = demo_engine(rl, task_list, HARNESS)
    records = await TrainLoop(rl, task_list, trainer, engine, echo=lambda _: None).run()
    assert records[0]["trained"] and records[0]["status"] == {"ok": 2} and trainer.state.step == 1
