"""Per-rank checkpoints in a Megatron-like directory layout.

::

    <save>/latest_checkpointed_iteration.txt
    <save>/iter_0000010/mp_rank_00_000_dp_000/model_optim_rng.pt

Every rank writes its own file: model chunks, its optimizer state (for the
distributed optimizer, only its shard), the LR scheduler, and the RNG
streams.  The tracker file is written last, by rank 0, after a barrier, so a
crash mid-save never points at a partial checkpoint.
"""

import os

import torch
import torch.distributed as dist

from minitron.parallel import state
from minitron.parallel.random import get_rng_state, set_rng_state

TRACKER = "latest_checkpointed_iteration.txt"

# Layout-defining arguments that must match between save and load.
_LAYOUT_ARGS = ("num_layers", "hidden_size", "num_attention_heads", "num_query_groups",
                "tensor_model_parallel_size", "pipeline_model_parallel_size",
                "context_parallel_size", "expert_model_parallel_size", "num_experts",
                "use_distributed_optimizer", "world_size")


def checkpoint_dir(root, iteration):
    return os.path.join(root, f"iter_{iteration:07d}")


def rank_file(root, iteration):
    name = "mp_rank_{:02d}_{:03d}_dp_{:03d}_cp_{:02d}".format(
        state.get_tensor_model_parallel_rank(), state.get_pipeline_model_parallel_rank(),
        state.get_data_parallel_rank(), state.get_context_parallel_rank())
    return os.path.join(checkpoint_dir(root, iteration), name, "model_optim_rng.pt")


def _barrier():
    if dist.is_initialized():
        dist.barrier()


def save_checkpoint(args, iteration, model_chunks, optimizer, scheduler):
    path = rank_file(args.save, iteration)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    torch.save({
        "iteration": iteration,
        "layout": {k: getattr(args, k, None) for k in _LAYOUT_ARGS},
        "model": [chunk.state_dict() for chunk in model_chunks],
        "optimizer": optimizer.state_dict(),
        "lr_scheduler": scheduler.state_dict(),
        "rng_state": get_rng_state(),
    }, path)
    _barrier()
    if not dist.is_initialized() or dist.get_rank() == 0:
        with open(os.path.join(args.save, TRACKER), "w") as f:
            f.write(str(iteration))
    _barrier()


def read_tracker(root):
    """Latest saved iteration under ``root``, or None if there is none."""
    path = os.path.join(root, TRACKER)
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return int(f.read().strip())


def load_checkpoint(args, model_chunks, optimizer, scheduler):
    """Restore state from ``args.load``; returns the iteration to resume at (0 if none)."""
    iteration = read_tracker(args.load)
    if iteration is None:
        return 0
    sd = torch.load(rank_file(args.load, iteration))
    for key, saved in sd["layout"].items():
        current = getattr(args, key, None)
        if saved != current:
            raise RuntimeError(f"checkpoint was saved with {key}={saved}, now {current}")
    for chunk, chunk_sd in zip(model_chunks, sd["model"]):
        chunk.load_state_dict(chunk_sd)
    optimizer.load_state_dict(sd["optimizer"])
    scheduler.load_state_dict(sd["lr_scheduler"])
    set_rng_state(sd["rng_state"])
    _barrier()
    return sd["iteration"]
