"""One optimizer iteration and one evaluation pass, plus loss reduction."""

import torch
import torch.distributed as dist

from minitron.parallel import state
from minitron.training.schedules import get_forward_backward_func


def reduce_loss_for_logging(losses, args):
    """Mean LM loss over micro-batches and data/context-parallel replicas.

    Only last-stage ranks hold losses; every rank contributes (zero
    elsewhere) to one world all-reduce, and the tp replicas of the last
    stage, which hold identical values, are divided out.
    """
    local = torch.stack(losses).mean() if losses else torch.zeros(())
    buf = local.detach().double().reshape(1)
    if dist.is_initialized() and dist.get_world_size() > 1:
        dist.all_reduce(buf)
    replicas = (args.tensor_model_parallel_size * args.data_parallel_size
                * args.context_parallel_size)
    return float(buf.item()) / replicas


def train_step(micro_batches, model_chunks, optimizer, scheduler, args):
    """Forward/backward over the global batch and one optimizer update.

    Returns (reported loss, update applied, grad norm, lr).
    """
    for chunk in model_chunks:
        chunk.train()
    optimizer.zero_grad()
    forward_backward = get_forward_backward_func(args)
    losses = forward_backward(model_chunks, micro_batches, args,
                              loss_scale=optimizer.loss_scale())
    lr = scheduler.get_lr()
    applied, grad_norm = optimizer.step(lr)
    if applied:
        scheduler.step()
    return reduce_loss_for_logging(losses, args), applied, grad_norm, lr


@torch.no_grad()
def evaluate(micro_batch_groups, model_chunks, args):
    """Mean validation loss over ``micro_batch_groups`` (one list per eval iter)."""
    for chunk in model_chunks:
        chunk.eval()
    forward = get_forward_backward_func(args)
    total = 0.0
    for micro_batches in micro_batch_groups:
        total += reduce_loss_for_logging(
            forward(model_chunks, micro_batches, args, forward_only=True), args)
    return total / max(len(micro_batch_groups), 1)


def is_logging_rank():
    return not dist.is_initialized() or dist.get_rank() == 0


def parallel_summary():
    return (f"tp={state.get_tensor_model_parallel_world_size()} "
            f"pp={state.get_pipeline_model_parallel_world_size()} "
            f"dp={state.get_data_parallel_world_size()} "
            f"cp={state.get_context_parallel_world_size()} "
            f"ep={state.get_expert_model_parallel_world_size()}")
