"""Global gradient-norm computation and clipping across all parallel ranks.

Every rank adds the squared gradients of the elements it owns (sharded
elements always, replicated elements only on their canonical replica) and a
single world all-reduce yields the exact norm of the full model's gradient,
whatever the parallel layout.
"""

import torch
import torch.distributed as dist


def global_grad_norm(local_sq_sum):
    """sqrt of the world-wide sum of per-rank squared-norm contributions."""
    total = torch.tensor([float(local_sq_sum)], dtype=torch.float64)
    if dist.is_initialized() and dist.get_world_size() > 1:
        dist.all_reduce(total)
    return float(total.sqrt())


def owned_sq_sum(grad, owned_mask):
    return float(torch.sum(grad.double() ** 2 * owned_mask.double()))


def clip_coefficient(total_norm, max_norm):
    """Factor to multiply gradients by so their norm is at most ``max_norm``."""
    if max_norm is None or max_norm <= 0:
        return 1.0
    return min(1.0, max_norm / (total_norm + 1e-6))
