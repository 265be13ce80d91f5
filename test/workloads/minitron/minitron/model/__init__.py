"""GPT model components (Megatron-core style, [seq, batch, hidden] layout)."""

from minitron.model.config import TransformerConfig
from minitron.model.gpt import GPTModel

__all__ = ["TransformerConfig", "GPTModel"]
