"""Adam, gradient clipping, the sharded distributed optimizer and LR schedules."""

from minitron.optimizer.builder import build_optimizer
from minitron.optimizer.lr_scheduler import LRScheduler

__all__ = ["build_optimizer", "LRScheduler"]
