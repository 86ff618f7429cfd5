"""The trainer: an algorithm-blind optimizer step over packed prefix trees.

    trainer = Trainer(model, TrainerConfig(lr=1e-5))
    layouts = [layout_tree(s) for s in samples]
    adv = grpo_advantages([s.reward for s in samples], [s.group_id for s in samples])
    metrics = trainer.step(layouts, [broadcast(L, a) for L, a in zip(layouts, adv)])
    await engine.update_weights(trainer.weights())

The caller (an algorithm) hands per-token arrays aligned with each TreeLayout: advantages, optionally
value targets (PPO) and per-token weights (default: each rollout weighted 1/N and normalised by its
own unique trained-token count, `rl.advantages.rollout_token_weights`). One `step` is:

1. prepare: pack the trees first-fit into micro-batches of at most `token_budget` tokens; forward
   without gradients to record logp_old (and logp_ref, V_old) on the trained tokens;
2. update: per micro-batch, forward + `rl.losses.policy_loss` (+ value loss) + backward (gradients
   accumulate; the weights make the sum over micro-batches the loss of the whole step), all-reduce
   over data-parallel ranks, clip the gradient norm, AdamW, scheduler.

`prepare` and `update` are public so that PPO can run several updates on one prepared batch.
Under FSDP (`cfg.fsdp`, `train.fsdp`) the same step runs on sharded parameters, with LoRA or full
weights; checkpoints are sharded. Left out: micro-batches of several rows (one packed row each).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from harnessrl.rl.advantages import rollout_token_weights
from harnessrl.rl.forward import packed_forward, set_attention
from harnessrl.rl.losses import Metrics, policy_loss, value_loss
from harnessrl.rl.packing import PackedBatch, TreeLayout, pack_by_budget, share_prefixes
from harnessrl.train import distributed as dp
from harnessrl.train import fsdp
from harnessrl.train.checkpoint import (
    TrainState,
    checkpoint_path,
    is_sharded,
    load_checkpoint,
    load_sharded,
    save_checkpoint,
    save_sharded,
)
from harnessrl.train.config import TrainerConfig
from harnessrl.train.lora import apply_lora, is_lora, lora_scalings, merge_lora, merged_state_dict
from harnessrl.train.value import ValueModel


@dataclass
class StepBatch:
    """A prepared step: packed micro-batches whose extras hold adv, w (and ref, ret)."""

    micro: list[PackedBatch]
    num_rollouts: int
    """N over all data-parallel ranks."""
    metrics: Metrics = field(default_factory=Metrics)


def _lr_lambda(cfg: TrainerConfig) -> Any:
    def factor(step: int) -> float:
        if cfg.warmup_steps > 0 and step < cfg.warmup_steps:
            return (step + 1) / cfg.warmup_steps
        if cfg.schedule == "constant":
            return 1.0
        progress = min(1.0, (step - cfg.warmup_steps) / max(1, cfg.total_steps - cfg.warmup_steps))
        if cfg.schedule == "linear":
            return 1.0 - progress
        return 0.5 * (1.0 + math.cos(math.pi * progress))

    return factor


class Trainer:
    """Owns the policy (optionally LoRA-wrapped), value model, reference model, optimizer and schedule."""

    def __init__(
        self, model: Any, cfg: TrainerConfig, *, ref_model: Any | None = None, critic: Any | None = None
    ) -> None:
        torch.manual_seed(cfg.seed)
        self.cfg = cfg
        if cfg.lora is not None:
            model = apply_lora(model, cfg.lora)
        set_attention(model, cfg.attention)
        self.model = model
        self.ref_model = ref_model
        if ref_model is not None:
            set_attention(ref_model, cfg.attention)
            ref_model.eval().requires_grad_(False)
        if cfg.loss.kl_coef > 0 and ref_model is None:
            raise ValueError("loss.kl_coef > 0 needs a ref_model")
        self.value: ValueModel | None = None
        if cfg.value == "critic":
            if critic is None:
                raise ValueError("value='critic' needs a critic model")
            set_attention(critic, cfg.attention)
            self.value = ValueModel(critic.config.hidden_size, backbone=critic)
        elif cfg.value == "head":
            self.value = ValueModel(model.config.hidden_size)
        self.device = next(model.parameters()).device
        if cfg.attention == "flex" and self.device.type == "cpu":
            raise ValueError(
                "FlexAttention has no CPU backward in torch 2.13: train with attention='sdpa' on CPU"
            )
        if self.value is not None:
            self.value.to(self.device)
        for module in self._modules():
            dp.broadcast_params(module)
        if cfg.fsdp:
            if not dp.active() or self.value is not None:
                raise ValueError("fsdp needs torchrun with 2+ ranks, and no value model")
            fsdp.shard_model(model)
        self.params = [p for m in self._modules() for p in m.parameters() if p.requires_grad]
        self.optimizer = torch.optim.AdamW(
            self.params, lr=cfg.lr, betas=cfg.betas, eps=cfg.adam_eps, weight_decay=cfg.weight_decay
        )
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, _lr_lambda(cfg))
        self.state = TrainState()

    def _modules(self) -> list[torch.nn.Module]:
        return [self.model] + ([self.value] if self.value is not None else [])

    def _autocast(self) -> contextlib.AbstractContextManager[Any]:
        if not self.cfg.bf16:
            return contextlib.nullcontext()
        return torch.autocast(self.device.type, dtype=torch.bfloat16)

    # ---------------------------------------------------------------------------------------------
    # Forward-only passes
    # ---------------------------------------------------------------------------------------------

    def _padded(self, batches: Sequence[PackedBatch]) -> list[PackedBatch]:
        """Under FSDP, pad with dummy micro-batches to the most any rank runs (they are collectives)."""
        if not self.cfg.fsdp:
            return list(batches)
        keys = sorted(batches[0].extras) if batches else ["adv", "w"] + (["ref"] if self.ref_model else [])
        missing = fsdp.max_over_ranks(len(batches)) - len(batches)
        return list(batches) + [fsdp.dummy_batch(keys) for _ in range(missing)]

    def _scatter(self, batch: PackedBatch, values: torch.Tensor) -> torch.Tensor:
        full = torch.zeros(batch.num_tokens, dtype=torch.float32)
        full[batch.model_positions()] = values.detach().float().cpu()
        return full

    @torch.no_grad()
    def _forward_only(
        self, batches: Sequence[PackedBatch]
    ) -> Iterator[tuple[PackedBatch, dict[str, torch.Tensor]]]:
        """Per micro-batch: [T] arrays old (policy log-probs), and v_old with a value model."""
        for module in self._modules():
            module.eval()
        for batch in self._padded(batches):
            out: dict[str, torch.Tensor] = {}
            with self._autocast():
                res = packed_forward(
                    self.model,
                    batch,
                    attention=self.cfg.attention,
                    temperature=self.cfg.temperature,
                    keep_hidden=self.value is not None,
                )
                out["old"] = self._scatter(batch, res.logprobs)
                if self.value is not None:
                    out["v_old"] = self._scatter(
                        batch, self.value.on_batch(batch, self.cfg.attention, res.hidden)
                    )
            yield batch, out

    def logprobs(self, layouts: Sequence[TreeLayout]) -> list[torch.Tensor]:
        """Per tree, [T] trainer log-probs of the trained tokens (0 elsewhere), current weights."""
        return self._per_tree(layouts, "old")

    def values(self, layouts: Sequence[TreeLayout]) -> list[torch.Tensor]:
        """Per tree, [T] values V(state before token) at the trained tokens (0 elsewhere)."""
        if self.value is None:
            raise ValueError("this trainer has no value model (cfg.value = 'none')")
        return self._per_tree(layouts, "v_old")

    def _per_tree(self, layouts: Sequence[TreeLayout], key: str) -> list[torch.Tensor]:
        out: list[torch.Tensor] = [torch.zeros(0)] * len(layouts)
        for batch, arrays in self._forward_only(pack_by_budget(layouts, self.cfg.token_budget)):
            for item, off in zip(batch.items, batch.offsets, strict=True):
                out[item] = arrays[key][off : off + layouts[item].num_tokens].clone()
        return out

    # ---------------------------------------------------------------------------------------------
    # The step
    # ---------------------------------------------------------------------------------------------

    def prepare(
        self,
        layouts: Sequence[TreeLayout],
        advantages: Sequence[torch.Tensor],
        *,
        returns: Sequence[torch.Tensor] | None = None,
        weights: Sequence[torch.Tensor] | None = None,
    ) -> StepBatch:
        """Pack this rank's trees (and record reference log-probs on them when KL is on).

        logp_old and the old values are not computed here: the update is one optimizer step over
        these micro-batches with the weights they were packed under, so the policy's log-probs
        before the step are exactly the detached log-probs of the update's own forward (`_micro_loss`),
        and a second forward pass would only recompute them (it cost a third of a step)."""
        if len(advantages) != len(layouts):
            raise ValueError(f"{len(advantages)} advantage arrays for {len(layouts)} trees")
        if self.value is not None and returns is None:
            raise ValueError("a trainer with a value model needs value targets (returns)")
        n = dp.global_count(len(layouts))
        if weights is None:
            weights = rollout_token_weights(layouts, total=n)
        extras: dict[str, Sequence[torch.Tensor]] = {"adv": advantages, "w": weights}
        if returns is not None:
            extras["ret"] = returns
        if self.cfg.share_prefixes:
            layouts, forest_extras = share_prefixes(layouts, self.cfg.token_budget, extras)
            extras = dict(forest_extras)
        step = StepBatch(micro=pack_by_budget(layouts, self.cfg.token_budget, extras), num_rollouts=n)
        if self.ref_model is not None:
            for batch, arrays in self._reference(step.micro):
                batch.extras.update(arrays)
        return step

    @torch.no_grad()
    def _reference(
        self, batches: Sequence[PackedBatch]
    ) -> Iterator[tuple[PackedBatch, dict[str, torch.Tensor]]]:
        """Per micro-batch: [T] reference-model log-probs (`ref`), for the KL term."""
        assert self.ref_model is not None
        self.ref_model.eval()
        for batch in self._padded(batches):
            with self._autocast():
                ref = packed_forward(
                    self.ref_model, batch, attention=self.cfg.attention, temperature=self.cfg.temperature
                )
            yield batch, {"ref": self._scatter(batch, ref.logprobs)}

    def _micro_loss(self, batch: PackedBatch, metrics: Metrics) -> torch.Tensor:
        with self._autocast():
            out = packed_forward(
                self.model,
                batch,
                attention=self.cfg.attention,
                temperature=self.cfg.temperature,
                entropy=True,
                keep_hidden=self.value is not None and self.value.backbone is None,
            )
            mask = batch.loss_mask
            logp_old = out.logprobs.detach()  # the weights have not moved yet (see `prepare`)
            loss = policy_loss(  # also records the mismatch of logp_old against the sampler
                out.logprobs,
                logp_old,
                batch.rollout_logprobs[mask].to(self.device),
                batch.extras["adv"][mask].to(self.device),
                batch.extras["w"][mask].to(self.device),
                self.cfg.loss,
                logp_ref=batch.extras["ref"][mask].to(self.device) if "ref" in batch.extras else None,
                entropy=out.entropy,
                metrics=metrics,
            )
            if self.value is not None:
                v = self.value.on_batch(batch, self.cfg.attention, out.hidden)
                lv = value_loss(
                    v.float(),
                    v.detach().float(),  # the values before the step, as logp_old
                    batch.extras["ret"][mask].to(self.device),
                    batch.extras["w"][mask].to(self.device),
                    self.cfg.loss.value_clip,
                    metrics,
                )
                loss = loss + self.cfg.loss.value_coef * lv
        return loss

    def update(self, step: StepBatch) -> dict[str, float]:
        """One optimizer step over the prepared micro-batches (gradient accumulation, clip, AdamW).
        Over several ranks a collective; the metrics are the whole step's on every rank."""
        for module in self._modules():
            module.train()
        self.optimizer.zero_grad(set_to_none=True)
        metrics = Metrics()
        metrics.merge(step.metrics)
        for batch in self._padded(step.micro):
            loss = self._micro_loss(batch, metrics)
            (loss * dp.world_size() if self.cfg.fsdp else loss).backward()  # FSDP averages over ranks
            metrics.add("loss/total", float(loss.detach()), 0.0)
        if not self.cfg.fsdp:  # FSDP reduce-scatters (sums) the gradients in backward
            dp.all_reduce_grads(self.params)
        clip = self.cfg.grad_clip if self.cfg.grad_clip is not None else float("inf")
        grad_norm = torch.nn.utils.clip_grad_norm_(self.params, clip)
        if hasattr(grad_norm, "full_tensor"):  # a DTensor under FSDP
            grad_norm = grad_norm.full_tensor()
        lr = float(self.scheduler.get_last_lr()[0])
        self.optimizer.step()
        self.scheduler.step()
        self.state.step += 1
        tokens = sum(b.num_tokens for b in step.micro)
        trained = sum(int(b.loss_mask.sum()) for b in step.micro)
        tokens, trained, micro = dp.sum_ints([tokens, trained, len(step.micro)])  # over all ranks
        result = dp.merge_metrics(metrics).result()
        result.update(
            grad_norm=float(grad_norm), lr=lr, tokens=tokens, trained_tokens=trained, micro_batches=micro
        )
        return result

    def step(
        self,
        layouts: Sequence[TreeLayout],
        advantages: Sequence[torch.Tensor],
        *,
        returns: Sequence[torch.Tensor] | None = None,
        weights: Sequence[torch.Tensor] | None = None,
    ) -> dict[str, float]:
        """prepare + one update."""
        return self.update(self.prepare(layouts, advantages, returns=returns, weights=weights))

    # ---------------------------------------------------------------------------------------------
    # Hand-off and checkpoints
    # ---------------------------------------------------------------------------------------------

    def weights(self) -> dict[str, torch.Tensor]:
        """Policy weights for `Engine.update_weights`: plain names, LoRA merged (detached; the tensors of
        a full fine-tune are the live parameters, so an engine must copy them before the next step)."""
        if self.cfg.fsdp:  # gathered on rank 0 only (collective)
            full = fsdp.full_state_dict(self.model)
            if not is_lora(self.model) or not full:
                return full
            return merge_lora(full, lora_scalings(self.model))
        if is_lora(self.model):
            return merged_state_dict(self.model)
        return {k: v.detach() for k, v in self.model.state_dict().items()}

    def save(self, root: str | Path) -> Path:
        """Checkpoint everything needed for an exact resume under `root/step-<n>/`. Over several ranks
        a collective: under FSDP each rank writes its shards (`checkpoint.save_sharded`); replicas
        leave it to rank 0."""
        if self.cfg.fsdp:
            extra = {"scheduler": self.scheduler.state_dict()}
            return save_sharded(root, self.state, self.model, self.optimizer, extra)
        payload: dict[str, Any] = {
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict(),
        }
        if self.value is not None:
            payload["value"] = self.value.state_dict()
        if dp.rank() > 0:  # replicas: rank 0 writes the one checkpoint
            dp.barrier()
            return checkpoint_path(root, self.state)
        path = save_checkpoint(root, self.state, payload)
        dp.barrier()
        return path

    def load(self, path: str | Path) -> None:
        """Restore a checkpoint written by `save` (also restores the global RNG streams). Without FSDP
        a sharded checkpoint loads too (each rank reads the whole state; e.g. one process reading what
        N ranks wrote), except into a value model (a sharded one holds none)."""
        if self.cfg.fsdp or is_sharded(path):
            if self.value is not None:
                raise ValueError(f"{path} is sharded and holds no value model")
            self.state, payload = load_sharded(path, self.model, self.optimizer, same_ranks=self.cfg.fsdp)
            self.scheduler.load_state_dict(payload["scheduler"])
            return
        state, payload = load_checkpoint(path)
        self.model.load_state_dict(payload["model"])
        if self.value is not None:
            self.value.load_state_dict(payload["value"])
        self.optimizer.load_state_dict(payload["optimizer"])
        self.scheduler.load_state_dict(payload["scheduler"])
        self.state = state
