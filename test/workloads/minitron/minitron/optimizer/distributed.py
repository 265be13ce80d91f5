"""Distributed optimizer: Adam state and fp32 master weights sharded over dp.

Each data-parallel rank owns a contiguous 1/dp shard of every flat bucket.
Gradients are reduce-scattered so a rank receives only its shard's mean
gradient, it updates only its shard (holding 1/dp of the optimizer memory),
and the updated shards are all-gathered back into the model weights -- the
ZeRO-1 scheme of Megatron's ``--use-distributed-optimizer``.
"""

import torch

from minitron.optimizer.optimizer import MegatronOptimizer
from minitron.parallel import comm


def shard_range(numel, world, rank):
    """[start, end) of ``rank``'s shard when ``numel`` is split ``world`` ways."""
    shard = -(-numel // world)
    start = min(rank * shard, numel)
    return start, min(start + shard, numel), shard


class DistributedOptimizer(MegatronOptimizer):
    def _range(self, bucket):
        return shard_range(bucket.numel, comm.group_size(bucket.group),
                           comm.group_rank(bucket.group))

    def _pad(self, flat, bucket):
        _, _, shard = self._range(bucket)
        padded = torch.zeros(shard * comm.group_size(bucket.group))
        padded[:flat.numel()] = flat
        return padded

    def _initial_main_params(self, bucket):
        start, end, _ = self._range(bucket)
        return bucket.flat_params()[start:end].clone()

    def _reduce_grads(self, bucket):
        start, end, shard = self._range(bucket)
        summed = comm.all_reduce(self._pad(bucket.flat_grads(), bucket), bucket.group)
        return summed[start:end] / bucket.divisor

    def _local_masks(self, bucket):
        start, end, _ = self._range(bucket)
        # Shards are disjoint, so every rank owns its whole shard for the norm.
        return bucket.decay_mask[start:end], bucket.canonical_mask[start:end]

    def _publish_params(self, bucket, main):
        _, _, shard = self._range(bucket)
        local = torch.zeros(shard)
        local[:main.numel()] = main
        gathered = comm.all_gather(local, 0, bucket.group)
        bucket.write_params(gathered[:bucket.numel])
