"""Functional AdamW update on flat fp32 tensors.

Both the replicated and the distributed optimizer keep their parameters as
flat fp32 vectors (whole or a shard), so one elementwise routine serves both
and they stay numerically identical.
"""

import math

import torch


class AdamHyperParams:
    def __init__(self, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0):
        self.beta1, self.beta2, self.eps, self.weight_decay = beta1, beta2, eps, weight_decay


def adam_step(param, grad, exp_avg, exp_avg_sq, step, lr, hp, decay_mask):
    """In-place AdamW step; ``decay_mask`` (0/1) selects decayed elements.

    ``step`` is the 1-based count of updates including this one.
    """
    exp_avg.mul_(hp.beta1).add_(grad, alpha=1.0 - hp.beta1)
    exp_avg_sq.mul_(hp.beta2).addcmul_(grad, grad, value=1.0 - hp.beta2)
    bias_c1 = 1.0 - hp.beta1 ** step
    bias_c2 = 1.0 - hp.beta2 ** step
    denom = (exp_avg_sq / bias_c2).sqrt_().add_(hp.eps)
    # Decoupled weight decay: shrink the weights, independent of the gradient.
    param.mul_(1.0 - lr * hp.weight_decay * decay_mask)
    param.addcdiv_(exp_avg, denom, value=-lr / bias_c1)


def new_state(numel):
    return {"exp_avg": torch.zeros(numel), "exp_avg_sq": torch.zeros(numel)}


def global_step_size(lr, step, hp):
    """Effective step multiplier after bias correction (for logging)."""
    return lr * math.sqrt(1.0 - hp.beta2 ** step) / (1.0 - hp.beta1 ** step)
