"""Grouping parameters into flat buckets by how their gradients are reduced.

Dense parameters are replicated over the data- (and context-) parallel group;
expert parameters only over the expert-data-parallel group, because ep peers
own different experts.  A bucket records the group, the divisor that turns
the summed gradient into a mean, and which elements this rank "owns" for the
global gradient norm so replicated values are counted exactly once.
"""

import torch

from minitron.parallel import comm, state


def _no_weight_decay(name, param):
    # Megatron exempts biases and norm parameters (all 1-D) from weight decay.
    return param.dim() == 1 or name.endswith(".bias")


class ParamBucket:
    def __init__(self, named_params, group, divisor, replica_rank):
        self.names = [n for n, _ in named_params]
        self.params = [p for _, p in named_params]
        self.group = group
        self.divisor = divisor
        self.numel = sum(p.numel() for p in self.params)
        tp_rank = state.get_tensor_model_parallel_rank() if state.is_initialized() else 0
        decay, owned = [], []
        for name, p in named_params:
            decay.append(torch.full((p.numel(),), 0.0 if _no_weight_decay(name, p) else 1.0))
            canonical = getattr(p, "tensor_model_parallel", False) or tp_rank == 0
            owned.append(torch.full((p.numel(),), 1.0 if canonical else 0.0))
        self.decay_mask = torch.cat(decay) if decay else torch.zeros(0)
        # tp-replicated elements count only on tp rank 0 ...
        self.canonical_mask = torch.cat(owned) if owned else torch.zeros(0)
        # ... and elements replicated across the bucket's group only on replica 0.
        self.owned_mask = self.canonical_mask if replica_rank == 0 else torch.zeros(self.numel)

    def flat_params(self):
        return torch.cat([p.detach().reshape(-1).float() for p in self.params])

    def flat_grads(self):
        return torch.cat([
            (p.grad if p.grad is not None else torch.zeros_like(p)).reshape(-1).float()
            for p in self.params])

    def write_params(self, flat):
        offset = 0
        for p in self.params:
            n = p.numel()
            p.data.copy_(flat[offset:offset + n].view_as(p))
            offset += n


def build_buckets(model_chunks):
    """Split the parameters of all model chunks into dense and expert buckets."""
    dense, expert = [], []
    for chunk_id, chunk in enumerate(model_chunks):
        for name, p in chunk.named_parameters():
            (expert if getattr(p, "expert_parallel", False) else dense).append(
                (f"{chunk_id}.{name}", p))
    if not state.is_initialized():
        return [ParamBucket(dense + expert, None, 1, 0)]
    dp_cp = state.get_data_parallel_group(with_context_parallel=True)
    buckets = [ParamBucket(dense, dp_cp, comm.group_size(dp_cp), comm.group_rank(dp_cp))]
    if expert:
        edp = state.get_expert_data_parallel_group()
        # Each expert's gradient already sums over its ep peers' tokens, so the
        # mean over all data-parallel replicas divides by the full dp size.
        buckets.append(ParamBucket(expert, edp, state.get_data_parallel_world_size(),
                                   comm.group_rank(edp)))
    return buckets


def allreduce_sequence_parallel_grads(model_chunks):
    """Sum grads of sequence-parallel-replicated params (LayerNorm etc.) over tp."""
    if not state.is_initialized() or state.get_tensor_model_parallel_world_size() == 1:
        return
    group = state.get_tensor_model_parallel_group()
    grads = [p.grad for chunk in model_chunks for p in chunk.parameters()
             if getattr(p, "sequence_parallel", False) and p.grad is not None]
    if not grads:
        return
    flat = comm.all_reduce(torch.cat([g.reshape(-1) for g in grads]), group)
    offset = 0
    for g in grads:
        g.copy_(flat[offset:offset + g.numel()].view_as(g))
        offset += g.numel()
