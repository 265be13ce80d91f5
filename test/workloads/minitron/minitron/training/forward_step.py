"""The per-micro-batch forward function shared by all schedules."""

import contextlib

import torch

from minitron.parallel import state
from minitron.parallel.context_parallel import get_batch_on_this_cp_rank


def autocast_context(bf16):
    """bf16 autocast on CPU, or a no-op context."""
    if bf16:
        return torch.autocast(device_type="cpu", dtype=torch.bfloat16)
    return contextlib.nullcontext()


def prepare_batch(batch):
    """Slice a micro-batch for this context-parallel rank (adds position_ids)."""
    return get_batch_on_this_cp_rank(batch, state.get_context_parallel_world_size(),
                                     state.get_context_parallel_rank())


def forward_step(model, batch, compute_loss, bf16=False):
    """Run one model chunk; returns the mean token loss or the hidden states."""
    with autocast_context(bf16):
        output = model(batch["tokens"], batch["position_ids"],
                       batch["labels"] if compute_loss else None)
    if compute_loss:
        return output.float().mean()
    return output
