"""Learning-rate schedule: linear warmup, then constant/linear/cosine decay to min-lr."""

import math


class LRScheduler:
    def __init__(self, max_lr, min_lr, warmup_steps, decay_steps, decay_style):
        if decay_style not in ("constant", "linear", "cosine"):
            raise ValueError(f"unknown lr decay style {decay_style!r}")
        self.max_lr = max_lr
        self.min_lr = min_lr
        self.warmup_steps = warmup_steps
        self.decay_steps = max(decay_steps, warmup_steps + 1)
        self.decay_style = decay_style
        self.num_steps = 0

    def get_lr(self):
        """LR for the update that follows ``num_steps`` completed updates."""
        step = self.num_steps
        if self.warmup_steps > 0 and step < self.warmup_steps:
            return self.max_lr * (step + 1) / self.warmup_steps
        if self.decay_style == "constant":
            return self.max_lr
        if step >= self.decay_steps:
            return self.min_lr
        ratio = (step - self.warmup_steps) / (self.decay_steps - self.warmup_steps)
        if self.decay_style == "linear":
            coeff = 1.0 - ratio
        else:
            coeff = 0.5 * (math.cos(math.pi * ratio) + 1.0)
        return self.min_lr + coeff * (self.max_lr - self.min_lr)

    def step(self, increment=1):
        self.num_steps += increment

    def state_dict(self):
        return {"num_steps": self.num_steps, "max_lr": self.max_lr, "min_lr": self.min_lr,
                "warmup_steps": self.warmup_steps, "decay_steps": self.decay_steps,
                "decay_style": self.decay_style}

    def load_state_dict(self, sd):
        self.num_steps = sd["num_steps"]
