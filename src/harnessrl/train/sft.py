"""Cold-start SFT: teach the policy the harness's action format before RL has variance to work with.

    result = await sft(cfg, tasks)          # cfg.sft; writes <sft.out_dir>/model, checkpoints, sft.json

Data, both as prefix trees of real rollouts (`trace.trace_rollout` -> TreeSample), so the trained
tokens are exactly the recorded ids and only model tokens are in the loss:
- demonstrations (`sft.demonstrations`): every task run through the real harness (`sft.harness`) in its
  sandbox with the scripted engine replaying the task's reference solution (`demo_engine`), so the
  prompts are exactly the ones that harness sends; only demonstrations the checker scores at or above
  `sft.min_score` are kept (the rest are counted);
- rollout folders (`sft.rollouts`): kept tree paths of `ok` rollouts with reward >= `sft.min_score`.
Every `heldout_every`-th tree (in task order) is held out; its token-mean NLL is measured before
training and after every step (the early-stopping signal, and the test that SFT learns).

Training uses the RL trainer (`train.trainer` settings: packing, budget, clipping, schedule) with the
loss swapped for the token-mean negative log-likelihood of the trained tokens (`sft_step`), and saves in
the RL checkpoint format (`Trainer.save`) plus a plain model folder `model/` (config, safetensors,
tokenizer): `train` starts from it with `engine.model = "<out_dir>/model"` (the trainer loads its
float32 copy of `engine.model`, the engine serves it), and so does `eval --checkpoint`.

Left out: LoRA export (the model folder is written from full fine-tunes only) and loss on environment
tokens (never trained).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from harnessrl.formats.rollout_dir import ROLLOUT_FILE, rollout_folders
from harnessrl.formats.sft import write_sft
from harnessrl.protocols import Engine
from harnessrl.rl.forward import packed_forward
from harnessrl.rl.packing import TreeLayout, layout_tree, pack_by_budget
from harnessrl.train.config import TrainerConfig, TrainSections
from harnessrl.train.trainer import Trainer
from harnessrl.types import HarnessName, Rollout, RolloutStatus, Task, TreeNode, TreeSample


@dataclass
class SftData:
    """Trees to train on and to hold out, plus why rollouts were not used (label -> count)."""

    train: list[TreeSample] = field(default_factory=list)
    heldout: list[TreeSample] = field(default_factory=list)
    dropped: dict[str, int] = field(default_factory=dict)


def demo_engine(cfg: TrainSections, tasks: Sequence[Task], harness: str) -> Engine:
    """The scripted engine of the demonstrations: the reference as one action through the harness's
    own shell tool, then its way of finishing (the adapter's `reference_engine`). A whitebox
    configuration with full context and the free ReAct workflow (`whitebox:??x00`) gets the clean
    turns; any other one `ReferenceEngine`, whose commands carry `echo ref-step-i;` progress markers
    (those are then learned too)."""
    from harnessrl.rollout.session import reference_engine

    return reference_engine(cfg, list(tasks), harness)


async def make_demonstrations(cfg: TrainSections, tasks: Sequence[Task], out_dir: Path) -> list[Rollout]:
    """Every task once through `sft.harness` with `demo_engine`; rollouts in task order."""
    from harnessrl.rollout.runner import RolloutJob
    from harnessrl.rollout.session import RolloutStack
    from harnessrl.train.schedule import rollout_id

    harness = cfg.sft.harness or cfg.rollout.harness
    run_cfg = cfg.model_copy(update={"rollout": cfg.rollout.model_copy(update={"out_dir": str(out_dir)})})
    options = dict(cfg.train.harness_options.get(harness, {}))
    if HarnessName.arg_of(harness, "whitebox") and cfg.train.harness_space is not None:
        options = dict(cfg.train.harness_space.options)
    jobs = [RolloutJob(t, harness, rollout_id(0, t, harness, 0), options=options) for t in tasks]
    async with RolloutStack.from_config(run_cfg, list(tasks), engine=demo_engine(cfg, tasks, harness)) as st:
        assert st.runner is not None
        return await st.runner.run_many(jobs)


def rollout_dirs(paths: Sequence[str | Path]) -> list[Path]:
    """Each path that is a rollout folder, or the rollout folders right under it (sorted)."""
    out: list[Path] = []
    for p in map(Path, paths):
        if (p / ROLLOUT_FILE).is_file():
            out.append(p)
        else:  # no link followed, no rollout's own files entered
            out += [d for d in rollout_folders(p, max_depth=1) if (d / ROLLOUT_FILE).is_file()]
    return out


def select_trees(rollouts: Sequence[Rollout], cfg: TrainSections) -> SftData:
    """Kept tree paths of ok rollouts scoring >= `sft.min_score`; every n-th kept tree held out."""
    from harnessrl.trace import trace_rollout, with_filter_status

    data = SftData()
    kept: list[TreeSample] = []
    for r in rollouts:
        label = r.status_label
        if r.status is RolloutStatus.OK:
            tree = trace_rollout(r, cfg.trace)
            label = with_filter_status(r, tree).status_label
            if label == "ok" and (r.reward is None or r.reward < cfg.sft.min_score):
                label = "below_min_score"
            elif label == "ok" and int(tree.stats.get("model_tokens_kept", 0)) == 0:
                label = "no_model_tokens"
            elif label == "ok":
                kept.append(tree.to_sample())
                continue
        data.dropped[label] = data.dropped.get(label, 0) + 1
    every = cfg.sft.heldout_every
    for i, sample in enumerate(kept):
        (data.heldout if every and i % every == every - 1 else data.train).append(sample)
    return data


def token_weights(layouts: Sequence[TreeLayout]) -> list[torch.Tensor]:
    """[T_i] per tree: 1 / (trained tokens of all trees) on its trained tokens: a token-mean NLL."""
    total = max(1, sum(L.num_model_tokens for L in layouts))
    return [L.loss_mask.float() / total for L in layouts]


def merge_samples(samples: Sequence[TreeSample]) -> tuple[TreeSample, list[int]]:
    """All trees as ONE forest in which a token prefix shared by several trees is stored once.

    Demonstrations of different tasks share the system prompt and tool block (most of a short
    prompt), so the merged forest has far fewer tokens to forward than the trees side by side; the
    attention mask and position ids (depth) keep every token's context exactly as in its own tree.
    Returns the forest and, per node, how many of the input trees contain it: the NLL weight of
    its tokens (a token's loss counts once per tree that holds it, as in `token_weights`)."""
    tok: list[int] = []
    model: list[bool] = []
    parent: list[int] = []
    owners: list[set[int]] = []
    kids: list[dict[tuple[int, bool], int]] = []
    roots: dict[tuple[int, bool], int] = {}
    seqs: list[list[int]] = []
    for i, sample in enumerate(samples):
        for path in sample.paths:
            here, seq = roots, list[int]()
            for n in path:
                node = sample.nodes[n]
                for t, m in zip(node.tokens, node.model_mask, strict=True):
                    idx = here.get((t, bool(m)))
                    if idx is None:
                        idx = here[(t, bool(m))] = len(tok)
                        tok.append(t)
                        model.append(bool(m))
                        parent.append(seq[-1] if seq else -1)
                        owners.append(set())
                        kids.append({})
                    owners[idx].add(i)
                    seq.append(idx)
                    here = kids[idx]
            seqs.append(seq)
    ends = {seq[-1] for seq in seqs if seq}
    node_of: list[int] = []
    nodes: list[dict[str, Any]] = []
    for i in range(len(tok)):  # a token's parent always has a smaller index
        p = parent[i]
        if p == -1 or len(kids[p]) > 1 or p in ends or len(owners[p]) != len(owners[i]):
            nodes.append({"parent": -1 if p == -1 else node_of[p], "tokens": [], "mask": []})
            node_of.append(len(nodes) - 1)
        else:
            node_of.append(node_of[p])
        nodes[node_of[i]]["tokens"].append(tok[i])
        nodes[node_of[i]]["mask"].append(model[i])
    tree_nodes = [
        TreeNode(node_id=k, parent=n["parent"], tokens=n["tokens"], model_mask=n["mask"],
                 logprobs=[0.0] * len(n["tokens"]))
        for k, n in enumerate(nodes)
    ]  # fmt: skip
    paths = [list(dict.fromkeys(node_of[i] for i in seq)) for seq in seqs]
    counts = [0] * len(nodes)
    for i in range(len(tok)):
        counts[node_of[i]] = len(owners[i])
    merged = TreeSample(rollout_id="merged", group_id="sft", reward=0.0, nodes=tree_nodes, paths=paths)
    return merged, counts


def merged_layout(samples: Sequence[TreeSample]) -> tuple[TreeLayout, torch.Tensor]:
    """The merged forest's layout and its [T] token weights (token-mean NLL over the input trees)."""
    merged, counts = merge_samples(samples)
    layout = layout_tree(merged)
    w = torch.tensor(counts, dtype=torch.float32)[layout.node_index] * layout.loss_mask.float()
    return layout, w / max(1.0, float(w.sum()))


def mean_nll(
    trainer: Trainer, layouts: Sequence[TreeLayout], weights: Sequence[torch.Tensor] | None = None
) -> float | None:
    """Token-mean NLL of the trained tokens under the trainer's current weights (no gradients);
    `weights` as from `token_weights` (the default) or `merged_layout`."""
    if not layouts:
        return None
    weights = weights if weights is not None else token_weights(layouts)
    logps = trainer.logprobs(layouts)
    return sum(float(-(lp * w).sum()) for lp, w in zip(logps, weights, strict=True))


def sft_step(
    trainer: Trainer, layouts: Sequence[TreeLayout], weights: Sequence[torch.Tensor] | None = None
) -> dict[str, float]:
    """One optimizer step of weighted NLL over the tree-packed batch (trainer's optimizer, clip, lr);
    `weights` per tree as in `mean_nll` (they sum to 1 over the batch)."""
    trainer.model.train()
    trainer.optimizer.zero_grad(set_to_none=True)
    weights = weights if weights is not None else token_weights(layouts)
    total = 0.0
    for batch in pack_by_budget(layouts, trainer.cfg.token_budget, {"w": list(weights)}):
        with trainer._autocast():
            out = packed_forward(trainer.model, batch, attention=trainer.cfg.attention)
            loss = -(out.logprobs * batch.extras["w"][batch.loss_mask].to(out.logprobs.device)).sum()
        loss.backward()
        total += float(loss.detach())
    clip = trainer.cfg.grad_clip if trainer.cfg.grad_clip is not None else float("inf")
    grad_norm = float(torch.nn.utils.clip_grad_norm_(trainer.params, clip))
    lr = float(trainer.scheduler.get_last_lr()[0])
    trainer.optimizer.step()
    trainer.scheduler.step()
    trainer.state.step += 1
    tokens = float(sum(L.num_tokens for L in layouts))
    return {"nll": total, "grad_norm": grad_norm, "lr": lr, "trees": float(len(layouts)), "tokens": tokens}


def sft_trainer_config(cfg: TrainSections) -> TrainerConfig:
    """`train.trainer` with the SFT run's lr, seed and horizon; temperature 1, no value model."""
    update = {"lr": cfg.sft.lr, "seed": cfg.sft.seed, "temperature": 1.0, "value": "none"}
    return cfg.train.trainer.model_copy(update={**update, "total_steps": max(1, cfg.sft.steps)})


def export_model(trainer: Trainer, model_name: str, dest: Path) -> Path:
    """Write the policy as a model folder (config, safetensors, tokenizer), atomically."""
    from harnessrl.engines.models import load_tokenizer, publish_folder

    def fill(tmp: Path) -> None:
        trainer.model.save_pretrained(tmp)
        load_tokenizer(model_name).save_pretrained(tmp)

    dest.parent.mkdir(parents=True, exist_ok=True)
    return publish_folder(dest, fill)


def train_sft(
    cfg: TrainSections, data: SftData, *, trainer: Trainer | None = None, echo: Callable[[str], None] = print
) -> dict[str, Any]:
    """`sft.steps` NLL steps over `data.train` (batches drawn epoch-wise); held-out NLL per step."""
    from harnessrl.engines.models import load_model

    if not data.train:
        raise ValueError(f"no trees to fine-tune on (dropped: {data.dropped})")
    trainer = trainer or Trainer(
        load_model(cfg.engine.model, "float32", cfg.engine.device), sft_trainer_config(cfg)
    )
    train = list(data.train)
    held = merged_layout(data.heldout) if data.heldout else None

    def held_nll() -> float | None:
        return None if held is None else mean_nll(trainer, [held[0]], [held[1]])

    rng, order = random.Random(cfg.sft.seed), list[int]()
    log: list[dict[str, Any]] = [{"step": 0, "heldout_nll": held_nll()}]
    echo(f"sft step 0/{cfg.sft.steps} | heldout nll {_f(log[0]['heldout_nll'])}")
    for step in range(1, cfg.sft.steps + 1):
        batch: list[int] = []
        while len(batch) < min(cfg.sft.batch_size, len(train)):
            if not order:
                order = list(range(len(train)))
                rng.shuffle(order)
            batch.append(order.pop())
        layout, w = merged_layout([train[i] for i in batch])
        metrics = sft_step(trainer, [layout], [w])
        every = cfg.sft.eval_every
        measure = step == cfg.sft.steps or (every > 0 and step % every == 0)
        rec = {"step": step, **metrics, "heldout_nll": held_nll() if measure else None}
        log.append(rec)
        echo(f"sft step {step}/{cfg.sft.steps} | batch nll {rec['nll']:.4f} | heldout nll "
             f"{_f(rec['heldout_nll'])} | grad {rec['grad_norm']:.3f}")  # fmt: skip
    out = Path(cfg.sft.out_dir)
    trainer.state.data_position = cfg.sft.steps
    ckpt = trainer.save(out / "checkpoints")
    model_dir = export_model(trainer, cfg.engine.model, out / "model")
    result = {
        "log": log,
        "train_trees": len(train),
        "heldout_trees": len(data.heldout),
        "dropped": data.dropped,
        "checkpoint": str(ckpt),
        "model": str(model_dir),
    }
    write_sft(out, result)
    return result


def _f(x: float | None) -> str:
    return "-" if x is None else f"{x:.4f}"


async def sft(
    cfg: TrainSections, tasks: Sequence[Task], *, echo: Callable[[str], None] = print
) -> dict[str, Any]:
    """Demonstrations (if asked) + rollout folders -> trees -> `train_sft`. Returns the sft.json dict."""
    from harnessrl.report.trackers import require
    from harnessrl.rollout.artifacts import read_rollout

    require(cfg.tracking)  # a tracker asked for but not installed fails before the demonstrations
    rollouts: list[Rollout] = []
    if cfg.sft.demonstrations:
        rollouts += await make_demonstrations(cfg, tasks, Path(cfg.sft.out_dir) / "demos")
        ok = sum(1 for r in rollouts if r.status is RolloutStatus.OK and (r.reward or 0) >= cfg.sft.min_score)
        echo(f"sft: {ok}/{len(rollouts)} demonstrations solved their task")
    rollouts += [read_rollout(d) for d in rollout_dirs(cfg.sft.rollouts)]
    data = select_trees(rollouts, cfg)
    echo(f"sft: {len(data.train)} trees to train on, {len(data.heldout)} held out; dropped {data.dropped}")
    result = train_sft(cfg, data, echo=echo)
    track_sft(cfg, result)
    return result


def track_sft(cfg: TrainSections, result: dict[str, Any]) -> None:
    """The NLL per step (`sft/<key>`) and the config to `sft.out_dir/tb` and `tracking.report_to`."""
    from harnessrl.report.trackers import open_trackers

    with open_trackers(cfg.sft.out_dir, cfg.tracking, kind="sft", config=cfg.model_dump(mode="json")) as t:
        for rec in result["log"]:
            t.scalars(rec["step"], {f"sft/{k}": v for k, v in rec.items() if k != "step" and v is not None})
