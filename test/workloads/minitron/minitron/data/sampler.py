"""Deterministic data-parallel micro-batch sampling.

Like Megatron's ``MegatronPretrainingSampler``, the sample stream is consumed
one global batch at a time; within it, micro-batch ``m`` of dp rank ``r``
takes samples ``[m * mbs * dp + r * mbs, ... + mbs)``.  Because the position in
the stream depends only on ``consumed_samples``, resuming at an iteration
reproduces exactly the batches an uninterrupted run would have seen.
"""

from minitron.data.dataset import collate


class MicroBatchSampler:
    def __init__(self, dataset, micro_batch_size, data_parallel_size, data_parallel_rank):
        self.dataset = dataset
        self.micro_batch_size = micro_batch_size
        self.dp_size = data_parallel_size
        self.dp_rank = data_parallel_rank

    def sample_indices(self, consumed_samples, micro_batch):
        """Dataset indices of this rank's ``micro_batch``-th micro-batch."""
        stride = self.micro_batch_size * self.dp_size
        start = consumed_samples + micro_batch * stride + self.dp_rank * self.micro_batch_size
        return list(range(start, start + self.micro_batch_size))

    def micro_batches(self, consumed_samples, num_micro_batches):
        """Collated micro-batches for the global batch starting at ``consumed_samples``."""
        return [collate([self.dataset[i] for i in self.sample_indices(consumed_samples, m)])
                for m in range(num_micro_batches)]
