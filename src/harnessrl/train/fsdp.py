"""FSDP2 (`torch.distributed.fsdp.fully_shard`) for the trainer: parameters, gradients and AdamW state
sharded over the data-parallel ranks (gloo on CPU, NCCL on GPU), launched by torchrun.

The units are each decoder layer, the decoder (embeddings, final norm) and the LM head: the packed
forward calls the decoder and the head separately (the head on chosen rows only), so each is a root
of its own. Models with tied embeddings are refused (one parameter cannot live in two units).
FSDP averages gradients over ranks (gloo has no pre-multiplied sum to turn that off), while the
trainer's per-token weights already divide by the global rollout count, so the trainer scales each
micro-batch loss by the world size before backward. Every forward and backward of a sharded model is
a collective, so all ranks must run the same number of micro-batches: ranks with fewer pad with
`dummy_batch()` (one token, nothing trained, zero loss).

LoRA: the adapters are injected before sharding, so each unit holds frozen base weights and trainable
adapters side by side (FSDP2 shards both; only the adapters get gradients and AdamW state).
`Trainer.weights()` gathers the full state dict on rank 0 only (the engine lives there; every rank
must call it) and folds the adapters in there (`lora.merge_lora`). Checkpoints are sharded
(`checkpoint.save_sharded`: torch.distributed.checkpoint, one set of shards per rank).

Left out: FSDP with a value model (head or critic).
"""

from __future__ import annotations

from typing import Any

import torch
import torch.distributed as dist

from harnessrl.rl.packing import PackedBatch


def shard_model(model: Any) -> None:
    """Wrap each decoder layer, the decoder and the LM head in FSDP2 units (in place)."""
    from torch.distributed.fsdp import fully_shard

    decoder, head = model.get_decoder(), model.get_output_embeddings()
    if head.weight is decoder.get_input_embeddings().weight:
        raise ValueError("fsdp: models with tied input/output embeddings are not supported")
    units = [*decoder.layers, decoder, head]
    for unit in units:
        fully_shard(unit)


def max_over_ranks(n: int) -> int:
    t = torch.tensor([n], dtype=torch.long)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return int(t.item())


def dummy_batch(keys: list[str]) -> PackedBatch:
    """A one-token micro-batch with no trained token (its loss is an exact 0 with a graph)."""
    one = torch.zeros(1, dtype=torch.long)
    return PackedBatch(
        input_ids=one,
        position_ids=one.clone(),
        pred_index=torch.full((1,), -1, dtype=torch.long),
        subtree_end=torch.ones(1, dtype=torch.long),
        loss_mask=torch.zeros(1, dtype=torch.bool),
        rollout_logprobs=torch.zeros(1),
        rollout_index=torch.full((1,), -1, dtype=torch.long),
        items=[],
        offsets=[],
        extras={k: torch.zeros(1) for k in keys},
    )


def full_state_dict(model: Any) -> dict[str, torch.Tensor]:
    """The unsharded state dict on rank 0 (CPU tensors); an empty dict on the other ranks."""
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

    sd = get_model_state_dict(model, options=StateDictOptions(full_state_dict=True, cpu_offload=True))
    return {k: v for k, v in sd.items() if isinstance(v, torch.Tensor)}
