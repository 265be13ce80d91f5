"""Tensor-parallel building blocks: column/row-parallel linear and
vocab-parallel embedding.

A column-parallel linear owns a slice of the *output* features, a
row-parallel linear a slice of the *input* features; chained (column then
row) they need a single all-reduce per block, which is the core trick of
Megatron tensor parallelism.  With sequence parallelism the all-reduce is
split into an all-gather before the column GEMM and a reduce-scatter after
the row GEMM.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

from minitron.parallel import mappings, state
from minitron.parallel.random import init_master_weight


def _partition(master, dim, rank, world):
    """Rank ``rank``'s contiguous shard of ``master`` along ``dim``."""
    size = master.size(dim)
    if size % world != 0:
        raise ValueError(f"cannot split dimension of size {size} across {world} ranks")
    chunk = size // world
    return master.narrow(dim, rank * chunk, chunk).clone()


def mark_tensor_parallel(param, partition_dim):
    """Tag a parameter as sharded so grad-norm and checkpoints treat it so."""
    param.tensor_model_parallel = True
    param.partition_dim = partition_dim
    return param


class ColumnParallelLinear(nn.Module):
    """Y = X A + b with A split by columns: each rank computes Y_i = X A_i."""

    def __init__(self, input_size, output_size, key, init_std, bias=True,
                 gather_output=False, sequence_parallel=False):
        super().__init__()
        self.tp_size = state.get_tensor_model_parallel_world_size()
        self.tp_rank = state.get_tensor_model_parallel_rank()
        self.gather_output = gather_output
        self.sequence_parallel = sequence_parallel
        self.output_size_per_partition = output_size // self.tp_size
        master = init_master_weight((output_size, input_size), key + ".weight", init_std)
        self.weight = mark_tensor_parallel(
            nn.Parameter(_partition(master, 0, self.tp_rank, self.tp_size)), 0)
        if bias:
            self.bias = mark_tensor_parallel(
                nn.Parameter(torch.zeros(self.output_size_per_partition)), 0)
        else:
            self.register_parameter("bias", None)

    def forward(self, x):
        if self.sequence_parallel:
            x = mappings.gather_from_sequence_parallel_region(x)
        else:
            x = mappings.copy_to_tensor_model_parallel_region(x)
        out = F.linear(x, self.weight, self.bias)
        if self.gather_output:
            out = mappings.gather_from_tensor_model_parallel_region(out)
        return out


class RowParallelLinear(nn.Module):
    """Y = X A + b with A split by rows: partial products are summed across tp."""

    def __init__(self, input_size, output_size, key, init_std, bias=True,
                 input_is_parallel=True, sequence_parallel=False):
        super().__init__()
        self.tp_size = state.get_tensor_model_parallel_world_size()
        self.tp_rank = state.get_tensor_model_parallel_rank()
        self.input_is_parallel = input_is_parallel
        self.sequence_parallel = sequence_parallel
        master = init_master_weight((output_size, input_size), key + ".weight", init_std)
        self.weight = mark_tensor_parallel(
            nn.Parameter(_partition(master, 1, self.tp_rank, self.tp_size)), 1)
        if bias:
            # The bias is added after the reduction, so it is replicated.
            self.bias = nn.Parameter(torch.zeros(output_size))
            self.bias.sequence_parallel = sequence_parallel
        else:
            self.register_parameter("bias", None)

    def forward(self, x):
        if not self.input_is_parallel:
            x = mappings.scatter_to_tensor_model_parallel_region(x)
        partial = F.linear(x, self.weight)
        if self.sequence_parallel:
            out = mappings.reduce_scatter_to_sequence_parallel_region(partial)
        else:
            out = mappings.reduce_from_tensor_model_parallel_region(partial)
        if self.bias is not None:
            out = out + self.bias
        return out


class VocabParallelEmbedding(nn.Module):
    """Embedding table split along the vocabulary across tp ranks.

    Each rank looks up the tokens that fall in its vocabulary range, writes
    zeros for the rest, and the partial embeddings are summed across ranks.
    """

    def __init__(self, num_embeddings, embedding_dim, key, init_std):
        super().__init__()
        self.tp_size = state.get_tensor_model_parallel_world_size()
        self.tp_rank = state.get_tensor_model_parallel_rank()
        per_rank = num_embeddings // self.tp_size
        self.vocab_start_index = self.tp_rank * per_rank
        self.vocab_end_index = self.vocab_start_index + per_rank
        master = init_master_weight((num_embeddings, embedding_dim), key + ".weight", init_std)
        self.weight = mark_tensor_parallel(
            nn.Parameter(_partition(master, 0, self.tp_rank, self.tp_size)), 0)

    def forward(self, input_ids):
        if self.tp_size > 1:
            outside = (input_ids < self.vocab_start_index) | (input_ids >= self.vocab_end_index)
            local_ids = (input_ids - self.vocab_start_index).masked_fill(outside, 0)
        else:
            outside, local_ids = None, input_ids
        out = F.embedding(local_ids, self.weight)
        if outside is not None:
            out = out.masked_fill(outside.unsqueeze(-1), 0.0)
        return mappings.reduce_from_tensor_model_parallel_region(out)
