"""Per-step metric logging in Megatron's golden-values JSON shape.

Megatron's functional tests compare runs through files like::

    {"lm loss": {"start_step": 1, "end_step": 50, "step_interval": 1,
                 "values": {"1": 10.85, ...}}}

:class:`GoldenValuesLogger` produces exactly that, one series per metric.
"""

import json


class GoldenValuesLogger:
    def __init__(self):
        self.series = {}

    def record(self, metric, step, value):
        self.series.setdefault(metric, {})[int(step)] = float(value)

    def to_dict(self):
        out = {}
        for metric, values in self.series.items():
            steps = sorted(values)
            out[metric] = {
                "start_step": steps[0],
                "end_step": steps[-1],
                "step_interval": 1,
                "values": {str(s): round(values[s], 6) for s in steps},
            }
        return out

    def write(self, path):
        with open(path, "w") as f:
            json.dump(self.to_dict(), f, indent=2)
            f.write("\n")


def format_iteration_line(iteration, train_iters, loss, lr, grad_norm, elapsed_ms, scale=None):
    parts = [f" iteration {iteration:8d}/{train_iters:8d}",
             f"elapsed time per iteration (ms): {elapsed_ms:.1f}",
             f"learning rate: {lr:.6E}",
             f"lm loss: {loss:.6E}",
             f"grad norm: {grad_norm:.4f}"]
    if scale is not None:
        parts.append(f"loss scale: {scale:.1f}")
    return " | ".join(parts) + " |"
