"""Causal self-attention with grouped-query attention and context parallelism.

The fused QKV projection is column-parallel and laid out group by group
(``[q_0 .. q_{n/g-1}, k, v]`` per query group) so a contiguous tp shard holds
whole query groups.  Under context parallelism keys and values are
all-gathered across the cp group and the causal mask is built from *global*
token positions, which makes the result independent of how the sequence was
split.
"""

import math

import torch
import torch.nn as nn

from minitron import fused
from minitron.parallel import comm, mappings, state
from minitron.parallel.layers import ColumnParallelLinear, RowParallelLinear


def causal_mask_from_positions(query_positions, key_positions):
    """Boolean [sq, sk] mask, True where a query must not see a key."""
    return key_positions.unsqueeze(0) > query_positions.unsqueeze(1)


def repeat_kv(x, num_repeats):
    """Expand [s, b, g, d] key/value groups to [s, b, g * r, d] heads."""
    if num_repeats == 1:
        return x
    return x.repeat_interleave(num_repeats, dim=2)


def core_attention(query, key, value, mask):
    """softmax(QK^T / sqrt(d)) V for [s, b, n, d] tensors; returns [s, b, n*d]."""
    sq, b, n, d = query.shape
    q = query.permute(1, 2, 0, 3)  # [b, n, sq, d]
    k = key.permute(1, 2, 0, 3)
    v = value.permute(1, 2, 0, 3)
    scores = torch.matmul(q, k.transpose(-1, -2))
    probs = fused.scale_mask_softmax(scores, mask, 1.0 / math.sqrt(d)).to(v.dtype)
    context = torch.matmul(probs, v)  # [b, n, sq, d]
    return context.permute(2, 0, 1, 3).reshape(sq, b, n * d)


class SelfAttention(nn.Module):
    def __init__(self, config, layer_number):
        super().__init__()
        self.config = config
        tp = state.get_tensor_model_parallel_world_size()
        self.head_dim = config.kv_channels
        self.heads_per_group = config.num_attention_heads // config.num_query_groups
        self.local_groups = config.num_query_groups // tp
        self.local_heads = config.num_attention_heads // tp
        qkv_size = (config.num_attention_heads + 2 * config.num_query_groups) * self.head_dim
        prefix = f"layers.{layer_number}.self_attention"
        self.linear_qkv = ColumnParallelLinear(
            config.hidden_size, qkv_size, prefix + ".linear_qkv", config.init_method_std,
            sequence_parallel=config.sequence_parallel)
        self.linear_proj = RowParallelLinear(
            config.num_attention_heads * self.head_dim, config.hidden_size,
            prefix + ".linear_proj", config.output_layer_init_std,
            sequence_parallel=config.sequence_parallel)

    def _split_qkv(self, mixed):
        s, b, _ = mixed.shape
        per_group = (self.heads_per_group + 2) * self.head_dim
        mixed = mixed.view(s, b, self.local_groups, per_group)
        q_size = self.heads_per_group * self.head_dim
        query, key, value = torch.split(mixed, [q_size, self.head_dim, self.head_dim], dim=-1)
        query = query.reshape(s, b, self.local_heads, self.head_dim)
        return query, key, value

    def _gather_context_parallel(self, key, value, positions):
        """All-gather keys/values (and their positions) across the cp group."""
        if state.get_context_parallel_world_size() == 1:
            return key, value, positions
        group = state.get_context_parallel_group()
        key = mappings.gather_with_reduce_scatter_grad(key, 0, group)
        value = mappings.gather_with_reduce_scatter_grad(value, 0, group)
        key_positions = comm.all_gather(positions.float(), 0, group).long()
        return key, value, key_positions

    def forward(self, hidden_states, position_ids):
        """hidden_states: [s, b, h]; position_ids: [s] global positions."""
        query, key, value = self._split_qkv(self.linear_qkv(hidden_states))
        key, value, key_positions = self._gather_context_parallel(key, value, position_ids)
        key = repeat_kv(key, self.heads_per_group)
        value = repeat_kv(value, self.heads_per_group)
        mask = causal_mask_from_positions(position_ids, key_positions)
        context = core_attention(query, key, value, mask)
        return self.linear_proj(context)
