"""Load-balanced sequence splitting for context parallelism.

With a causal mask, later tokens attend to more keys, so giving each cp rank
one contiguous quarter of the sequence would leave the last rank with most
of the work.  The sequence is cut into ``2 * cp`` chunks and rank ``r`` takes
chunks ``r`` and ``2 * cp - 1 - r`` (Megatron's zig-zag layout).
"""

import torch


def context_parallel_chunk_ids(cp_size, cp_rank):
    return [cp_rank, 2 * cp_size - 1 - cp_rank]


def get_batch_on_this_cp_rank(batch, cp_size, cp_rank):
    """Slice [b, s] tensors of ``batch`` and add global ``position_ids`` [s_local]."""
    seq_length = batch["tokens"].size(1)
    positions = torch.arange(seq_length)
    if cp_size == 1:
        return dict(batch, position_ids=positions)
    chunk = seq_length // (2 * cp_size)
    index = torch.cat([positions[c * chunk:(c + 1) * chunk]
                       for c in context_parallel_chunk_ids(cp_size, cp_rank)])
    out = {key: value.index_select(1, index) for key, value in batch.items()}
    out["position_ids"] = index
    return out
