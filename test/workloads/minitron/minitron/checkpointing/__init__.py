"""Save and resume training state (model, optimizer shards, scheduler, RNG)."""

from minitron.checkpointing.checkpoint import load_checkpoint, save_checkpoint

__all__ = ["save_checkpoint", "load_checkpoint"]
