"""The replicated (non-sharded) mixed-precision-ready Adam optimizer.

Every data-parallel rank keeps full fp32 master weights and Adam moments.
:class:`MegatronOptimizer` holds the step logic shared with the distributed
optimizer (unscale, inf check, global-norm clipping, AdamW, write-back);
subclasses decide which slice of each bucket a rank updates and how
gradients/parameters are communicated.
"""

import torch

from minitron.optimizer import adam
from minitron.optimizer.buckets import allreduce_sequence_parallel_grads
from minitron.optimizer.clip_grads import clip_coefficient, global_grad_norm, owned_sq_sum
from minitron.parallel import comm


class MegatronOptimizer:
    def __init__(self, model_chunks, buckets, hyper_params, clip_grad, grad_scaler=None):
        self.model_chunks = model_chunks
        self.buckets = buckets
        self.hp = hyper_params
        self.clip_grad = clip_grad
        self.grad_scaler = grad_scaler
        self.num_updates = 0
        self.main_params = [self._initial_main_params(b) for b in buckets]
        self.states = [adam.new_state(p.numel()) for p in self.main_params]

    # -- hooks for subclasses -------------------------------------------------
    def _initial_main_params(self, bucket):
        raise NotImplementedError

    def _reduce_grads(self, bucket):
        """Return this rank's slice of the data-parallel mean gradient."""
        raise NotImplementedError

    def _local_masks(self, bucket):
        """(decay mask, norm-ownership mask) aligned with the local slice."""
        raise NotImplementedError

    def _publish_params(self, bucket, main):
        """Make updated main params visible in the model on every rank."""
        raise NotImplementedError

    # -- shared logic ---------------------------------------------------------
    def zero_grad(self):
        for chunk in self.model_chunks:
            for p in chunk.parameters():
                p.grad = None

    def loss_scale(self):
        return self.grad_scaler.scale if self.grad_scaler is not None else 1.0

    def step(self, lr):
        """One update; returns (applied, grad_norm)."""
        allreduce_sequence_parallel_grads(self.model_chunks)
        grads = [self._reduce_grads(b) for b in self.buckets]
        if self.grad_scaler is not None:
            inv_scale = 1.0 / self.grad_scaler.scale
            grads = [g * inv_scale for g in grads]
            found_inf = self.grad_scaler.found_inf(torch.cat(grads))
            self.grad_scaler.update(found_inf)
            if found_inf:
                return False, float("nan")
        sq = sum(owned_sq_sum(g, self._local_masks(b)[1]) for g, b in zip(grads, self.buckets))
        grad_norm = global_grad_norm(sq)
        coeff = clip_coefficient(grad_norm, self.clip_grad)
        self.num_updates += 1
        for bucket, grad, main, st in zip(self.buckets, grads, self.main_params, self.states):
            if coeff < 1.0:
                grad = grad * coeff
            decay_mask = self._local_masks(bucket)[0]
            adam.adam_step(main, grad, st["exp_avg"], st["exp_avg_sq"], self.num_updates,
                           lr, self.hp, decay_mask)
            self._publish_params(bucket, main)
        return True, grad_norm

    def state_dict(self):
        return {
            "num_updates": self.num_updates,
            "main_params": [m.clone() for m in self.main_params],
            "states": [{k: v.clone() for k, v in s.items()} for s in self.states],
            "grad_scaler": self.grad_scaler.state_dict() if self.grad_scaler else None,
        }

    def load_state_dict(self, sd):
        self.num_updates = sd["num_updates"]
        for main, saved in zip(self.main_params, sd["main_params"]):
            main.copy_(saved)
        self.states = [{k: v.clone() for k, v in s.items()} for s in sd["states"]]
        if self.grad_scaler is not None and sd.get("grad_scaler"):
            self.grad_scaler.load_state_dict(sd["grad_scaler"])
        for bucket, main in zip(self.buckets, self.main_params):
            self._publish_params(bucket, main)


class FP32Optimizer(MegatronOptimizer):
    """Replicated optimizer: all-reduce gradients, update everything locally."""

    def _initial_main_params(self, bucket):
        return bucket.flat_params().clone()

    def _reduce_grads(self, bucket):
        flat = comm.all_reduce(bucket.flat_grads(), bucket.group)
        return flat / bucket.divisor

    def _local_masks(self, bucket):
        return bucket.decay_mask, bucket.owned_mask

    def _publish_params(self, bucket, main):
        bucket.write_params(main)
