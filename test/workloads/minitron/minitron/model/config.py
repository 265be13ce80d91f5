"""TransformerConfig: the model-shape subset of the parsed arguments.

Modules take this small object instead of the whole argparse namespace, the
way megatron.core's ``TransformerConfig`` decouples models from the CLI.
"""

import math
from dataclasses import dataclass
from typing import Optional


@dataclass
class TransformerConfig:
    num_layers: int = 2
    hidden_size: int = 64
    ffn_hidden_size: int = 256
    num_attention_heads: int = 4
    num_query_groups: int = 4
    seq_length: int = 32
    max_position_embeddings: int = 32
    vocab_size: int = 256
    norm_epsilon: float = 1e-5
    init_method_std: float = 0.02
    sequence_parallel: bool = False
    num_experts: Optional[int] = None
    moe_router_topk: int = 2
    moe_aux_loss_coeff: float = 0.0
    fp16_activations: bool = False

    @property
    def kv_channels(self):
        return self.hidden_size // self.num_attention_heads

    @property
    def output_layer_init_std(self):
        # Scaled init for projections feeding the residual stream (GPT-2 style).
        return self.init_method_std / math.sqrt(2.0 * self.num_layers)

    @classmethod
    def from_args(cls, args):
        return cls(
            num_layers=args.num_layers,
            hidden_size=args.hidden_size,
            ffn_hidden_size=args.ffn_hidden_size,
            num_attention_heads=args.num_attention_heads,
            num_query_groups=args.num_query_groups,
            seq_length=args.seq_length,
            max_position_embeddings=args.max_position_embeddings,
            vocab_size=args.vocab_size,
            norm_epsilon=args.norm_epsilon,
            init_method_std=args.init_method_std,
            sequence_parallel=args.sequence_parallel,
            num_experts=args.num_experts,
            moe_router_topk=args.moe_router_topk,
            moe_aux_loss_coeff=args.moe_aux_loss_coeff,
            fp16_activations=args.fp16,
        )
