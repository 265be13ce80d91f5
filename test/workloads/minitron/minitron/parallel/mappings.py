"""Autograd-aware communication for tensor, sequence and expert parallelism.

Each function here is a pair of collectives: what happens to activations in
the forward pass and the conjugate that must happen to their gradients in the
backward pass (e.g. an identity forward needs an all-reduce backward when the
consumer is a column-parallel layer).  Getting these pairs right is what makes
tensor-parallel training numerically equal to single-rank training.
"""

import torch

from minitron.parallel import comm


class _CopyToGroup(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        return x

    @staticmethod
    def backward(ctx, grad):
        return comm.all_reduce(grad, ctx.group), None


class _ReduceFromGroup(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, group):
        return comm.all_reduce(x, group)

    @staticmethod
    def backward(ctx, grad):
        return grad, None


class _ScatterToGroup(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, dim, group):
        ctx.dim, ctx.group = dim, group
        return comm.split_along_dim(x, dim, group)

    @staticmethod
    def backward(ctx, grad):
        return comm.all_gather(grad, ctx.dim, ctx.group), None, None


class _GatherFromGroup(torch.autograd.Function):
    """All-gather forward; the gradient is split (each rank's slice is exact)."""

    @staticmethod
    def forward(ctx, x, dim, group):
        ctx.dim, ctx.group = dim, group
        return comm.all_gather(x, dim, group)

    @staticmethod
    def backward(ctx, grad):
        return comm.split_along_dim(grad, ctx.dim, ctx.group), None, None


class _GatherReduceScatter(torch.autograd.Function):
    """All-gather forward; reduce-scatter backward.

    Used when every rank consumes the gathered tensor with *different* weights
    (sequence parallel before a column-parallel GEMM, MoE token dispatch), so
    the gradient of each rank's slice is the sum over all consumers.
    """

    @staticmethod
    def forward(ctx, x, dim, group):
        ctx.dim, ctx.group = dim, group
        return comm.all_gather(x, dim, group)

    @staticmethod
    def backward(ctx, grad):
        return comm.reduce_scatter(grad, ctx.dim, ctx.group), None, None


class _ReduceScatterGather(torch.autograd.Function):
    """Reduce-scatter forward; all-gather backward."""

    @staticmethod
    def forward(ctx, x, dim, group):
        ctx.dim, ctx.group = dim, group
        return comm.reduce_scatter(x, dim, group)

    @staticmethod
    def backward(ctx, grad):
        return comm.all_gather(grad, ctx.dim, ctx.group), None, None


def copy_to_group(x, group):
    return _CopyToGroup.apply(x, group)


def reduce_from_group(x, group):
    return _ReduceFromGroup.apply(x, group)


def scatter_to_group(x, dim, group):
    return _ScatterToGroup.apply(x, dim, group)


def gather_from_group(x, dim, group):
    return _GatherFromGroup.apply(x, dim, group)


def gather_with_reduce_scatter_grad(x, dim, group):
    return _GatherReduceScatter.apply(x, dim, group)


def reduce_scatter_with_gather_grad(x, dim, group):
    return _ReduceScatterGather.apply(x, dim, group)


# Megatron-flavoured names, bound to the tensor-parallel group at call time.

def _tp_group():
    from minitron.parallel import state
    return state.get_tensor_model_parallel_group() if state.is_initialized() else None


def copy_to_tensor_model_parallel_region(x):
    return copy_to_group(x, _tp_group())


def reduce_from_tensor_model_parallel_region(x):
    return reduce_from_group(x, _tp_group())


def scatter_to_tensor_model_parallel_region(x):
    return scatter_to_group(x, -1, _tp_group())


def gather_from_tensor_model_parallel_region(x):
    return gather_from_group(x, -1, _tp_group())


def scatter_to_sequence_parallel_region(x):
    """Split [s, b, h] activations along the sequence dimension."""
    return scatter_to_group(x, 0, _tp_group())


def gather_from_sequence_parallel_region(x):
    return gather_with_reduce_scatter_grad(x, 0, _tp_group())


def reduce_scatter_to_sequence_parallel_region(x):
    return reduce_scatter_with_gather_grad(x, 0, _tp_group())
