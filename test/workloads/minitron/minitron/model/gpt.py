"""GPTModel: one pipeline model chunk of a decoder-only language model.

A chunk has the embedding if it is the first virtual pipeline stage
(``pre_process``) and the final norm, output layer and loss if it is the
last (``post_process``); intermediate chunks receive their input activation
through :meth:`set_input_tensor`, as in megatron.core.
"""

import torch.nn as nn

from minitron.model.embedding import LanguageModelEmbedding
from minitron.model.transformer import TransformerBlock
from minitron.parallel.cross_entropy import vocab_parallel_cross_entropy
from minitron.parallel.layers import ColumnParallelLinear


def layers_for_chunk(num_layers, pp_size, pp_rank, vp_layers=None, chunk=0):
    """Global layer numbers owned by ``(pp_rank, chunk)``.

    Without virtual pipelining a stage owns one contiguous block; with it,
    virtual stage ``chunk * pp + pp_rank`` owns ``vp_layers`` consecutive layers,
    so layers are dealt round-robin across ranks.
    """
    if vp_layers is None:
        per_stage = num_layers // pp_size
        return list(range(pp_rank * per_stage, (pp_rank + 1) * per_stage))
    virtual_stage = chunk * pp_size + pp_rank
    return list(range(virtual_stage * vp_layers, (virtual_stage + 1) * vp_layers))


class GPTModel(nn.Module):
    def __init__(self, config, layer_numbers=None, pre_process=True, post_process=True):
        super().__init__()
        self.config = config
        self.pre_process = pre_process
        self.post_process = post_process
        if layer_numbers is None:
            layer_numbers = list(range(config.num_layers))
        self.layer_numbers = list(layer_numbers)
        self.input_tensor = None
        if pre_process:
            self.embedding = LanguageModelEmbedding(config)
        self.decoder = TransformerBlock(config, self.layer_numbers, post_layer_norm=post_process)
        if post_process:
            self.output_layer = ColumnParallelLinear(
                config.hidden_size, config.vocab_size, "output_layer",
                config.init_method_std, bias=False, gather_output=False,
                sequence_parallel=config.sequence_parallel)

    def set_input_tensor(self, tensor):
        """Activation received from the previous pipeline stage ([s, b, h])."""
        self.input_tensor = tensor

    def forward(self, input_ids, position_ids, labels=None):
        """Return per-token losses [b, s] (last stage with labels), else hidden states."""
        if self.pre_process:
            hidden = self.embedding(input_ids, position_ids.unsqueeze(0).expand_as(input_ids))
        else:
            hidden = self.input_tensor
        hidden = self.decoder(hidden, position_ids)
        if not self.post_process:
            return hidden
        logits = self.output_layer(hidden)  # [s, b, vocab / tp]
        if labels is None:
            return logits
        loss = vocab_parallel_cross_entropy(logits, labels.transpose(0, 1).contiguous())
        return loss.transpose(0, 1).contiguous()
