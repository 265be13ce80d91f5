"""Position-wise feed-forward block: column-parallel fc1, GeLU, row-parallel fc2."""

import torch.nn as nn
import torch.nn.functional as F

from minitron.parallel.layers import ColumnParallelLinear, RowParallelLinear


class MLP(nn.Module):
    def __init__(self, config, layer_number):
        super().__init__()
        prefix = f"layers.{layer_number}.mlp"
        self.linear_fc1 = ColumnParallelLinear(
            config.hidden_size, config.ffn_hidden_size, prefix + ".linear_fc1",
            config.init_method_std, sequence_parallel=config.sequence_parallel)
        self.linear_fc2 = RowParallelLinear(
            config.ffn_hidden_size, config.hidden_size, prefix + ".linear_fc2",
            config.output_layer_init_std, sequence_parallel=config.sequence_parallel)

    def forward(self, hidden_states):
        return self.linear_fc2(F.gelu(self.linear_fc1(hidden_states)))
