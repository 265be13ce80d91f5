"""Dynamic loss scaling for fp16 training.

The loss is multiplied by ``scale`` before backward so small gradients do not
underflow in half precision; gradients are divided by it again before the
update.  An inf/nan anywhere (on any rank) skips the step and halves the
scale; ``growth_interval`` clean steps double it.
"""

import torch
import torch.distributed as dist


class DynamicGradScaler:
    def __init__(self, initial_scale=2.0 ** 16, growth_interval=1000, backoff=0.5,
                 growth=2.0, min_scale=1.0):
        self.scale = float(initial_scale)
        self.growth_interval = growth_interval
        self.backoff, self.growth, self.min_scale = backoff, growth, min_scale
        self._clean_steps = 0

    @staticmethod
    def found_inf(flat_grads):
        bad = torch.tensor([0.0 if torch.isfinite(flat_grads).all() else 1.0])
        if dist.is_initialized() and dist.get_world_size() > 1:
            dist.all_reduce(bad, op=dist.ReduceOp.MAX)
        return bool(bad.item() > 0)

    def update(self, found_inf):
        if found_inf:
            self.scale = max(self.scale * self.backoff, self.min_scale)
            self._clean_steps = 0
            return
        self._clean_steps += 1
        if self._clean_steps % self.growth_interval == 0:
            self.scale *= self.growth

    def state_dict(self):
        return {"scale": self.scale, "clean_steps": self._clean_steps}

    def load_state_dict(self, sd):
        self.scale, self._clean_steps = sd["scale"], sd["clean_steps"]
