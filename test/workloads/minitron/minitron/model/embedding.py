"""Token + learned absolute position embeddings.

Position ids are passed in explicitly rather than assumed to be
``arange(seq)``: under context parallelism a rank holds non-contiguous chunks
of the sequence and must embed their *global* positions.
"""

import torch.nn as nn

from minitron.parallel import mappings
from minitron.parallel.layers import VocabParallelEmbedding
from minitron.parallel.random import init_master_weight


class LanguageModelEmbedding(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.word_embeddings = VocabParallelEmbedding(
            config.vocab_size, config.hidden_size, "embedding.word_embeddings",
            config.init_method_std)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings,
                                                config.hidden_size)
        self.position_embeddings.weight.data.copy_(init_master_weight(
            self.position_embeddings.weight.shape, "embedding.position_embeddings.weight",
            config.init_method_std))

    def forward(self, input_ids, position_ids):
        """[b, s] ids -> [s, b, h] embeddings (sequence-sharded under SP)."""
        words = self.word_embeddings(input_ids)
        positions = self.position_embeddings(position_ids)
        embeddings = (words + positions).transpose(0, 1).contiguous()
        if self.config.sequence_parallel:
            embeddings = mappings.scatter_to_sequence_parallel_region(embeddings)
        return embeddings
