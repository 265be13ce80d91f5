"""Thin wrappers over torch.distributed collectives.

gloo on CPU lacks ``reduce_scatter`` and half-precision reductions, so these
helpers emulate reduce-scatter with all-reduce + narrow and run every
collective in fp32.  All helpers are no-ops on single-rank groups, which lets
the model code call them unconditionally.
"""

import torch
import torch.distributed as dist


def group_size(group):
    if group is None or not dist.is_initialized():
        return 1
    return dist.get_world_size(group)


def group_rank(group):
    if group is None or not dist.is_initialized():
        return 0
    return dist.get_rank(group)


def _as_fp32(tensor):
    return tensor if tensor.dtype == torch.float32 else tensor.float()


def all_reduce(tensor, group, op=dist.ReduceOp.SUM):
    """Sum ``tensor`` over ``group``, returning a new tensor."""
    if group_size(group) == 1:
        return tensor
    buf = _as_fp32(tensor).contiguous().clone()
    dist.all_reduce(buf, op=op, group=group)
    return buf.to(tensor.dtype)


def all_reduce_(tensor, group):
    """In-place sum of an fp32 tensor over ``group``."""
    if group_size(group) > 1:
        dist.all_reduce(tensor, group=group)
    return tensor


def all_gather(tensor, dim, group):
    """Concatenate every rank's ``tensor`` along ``dim`` in rank order."""
    size = group_size(group)
    if size == 1:
        return tensor
    src = _as_fp32(tensor).contiguous()
    parts = [torch.empty_like(src) for _ in range(size)]
    dist.all_gather(parts, src, group=group)
    return torch.cat(parts, dim=dim).to(tensor.dtype)


def split_along_dim(tensor, dim, group):
    """This rank's contiguous chunk of ``tensor`` along ``dim``."""
    size = group_size(group)
    if size == 1:
        return tensor
    if tensor.size(dim) % size != 0:
        raise ValueError(f"dim {dim} of size {tensor.size(dim)} not divisible by {size}")
    chunk = tensor.size(dim) // size
    return tensor.narrow(dim, group_rank(group) * chunk, chunk).contiguous()


def reduce_scatter(tensor, dim, group):
    """Sum over ``group`` and keep this rank's chunk along ``dim``."""
    if group_size(group) == 1:
        return tensor
    return split_along_dim(all_reduce(tensor, group), dim, group)


def broadcast_object(obj, src, group=None):
    """Broadcast a picklable object from global rank ``src``."""
    if not dist.is_initialized() or dist.get_world_size() == 1:
        return obj
    holder = [obj]
    dist.broadcast_object_list(holder, src=src, group=group)
    return holder[0]
