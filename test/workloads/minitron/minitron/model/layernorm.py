"""LayerNorm whose parameters know about sequence parallelism.

With sequence parallelism each tp rank normalises a different slice of the
sequence, so the (replicated) LayerNorm weights receive different partial
gradients on each rank; the ``sequence_parallel`` tag tells the gradient
reduction to all-reduce them across the tp group.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


class LayerNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-5, sequence_parallel=False):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.bias = nn.Parameter(torch.zeros(hidden_size))
        self.weight.sequence_parallel = sequence_parallel
        self.bias.sequence_parallel = sequence_parallel

    def forward(self, x):
        return F.layer_norm(x, x.shape[-1:], self.weight, self.bias, self.eps)
