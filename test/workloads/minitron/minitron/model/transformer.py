"""Pre-LayerNorm transformer layer and the block of layers one model chunk owns."""

import torch.nn as nn

from minitron.model.attention import SelfAttention
from minitron.model.layernorm import LayerNorm
from minitron.model.mlp import MLP
from minitron.model.moe import MoELayer


def emulate_fp16_storage(x):
    """Round activations to fp16 precision (CPU has no fp16 GEMMs in torch 1.13)."""
    return x.half().float()


class TransformerLayer(nn.Module):
    def __init__(self, config, layer_number):
        super().__init__()
        self.config = config
        self.layer_number = layer_number
        sp = config.sequence_parallel
        self.input_layernorm = LayerNorm(config.hidden_size, config.norm_epsilon, sp)
        self.self_attention = SelfAttention(config, layer_number)
        self.pre_mlp_layernorm = LayerNorm(config.hidden_size, config.norm_epsilon, sp)
        if config.num_experts:
            self.mlp = MoELayer(config, layer_number)
        else:
            self.mlp = MLP(config, layer_number)

    def forward(self, hidden_states, position_ids):
        attn_out = self.self_attention(self.input_layernorm(hidden_states), position_ids)
        hidden_states = hidden_states + attn_out
        hidden_states = hidden_states + self.mlp(self.pre_mlp_layernorm(hidden_states))
        if self.config.fp16_activations:
            hidden_states = emulate_fp16_storage(hidden_states)
        return hidden_states


class TransformerBlock(nn.Module):
    """The consecutive layers (global numbers ``layer_numbers``) of one chunk."""

    def __init__(self, config, layer_numbers, post_layer_norm):
        super().__init__()
        self.layers = nn.ModuleList(TransformerLayer(config, n) for n in layer_numbers)
        self.final_layernorm = (
            LayerNorm(config.hidden_size, config.norm_epsilon, config.sequence_parallel)
            if post_layer_norm else None)

    def forward(self, hidden_states, position_ids):
        for layer in self.layers:
            hidden_states = layer(hidden_states, position_ids)
        if self.final_layernorm is not None:
            hidden_states = self.final_layernorm(hidden_states)
        return hidden_states
