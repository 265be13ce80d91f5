"""Mixture-of-experts layer: top-k router, experts, all-gather token dispatch.

Experts are sharded across the expert-parallel group.  Dispatch uses the
"allgather" strategy from megatron.core: every rank gathers the tokens (and
routing decisions) of its ep peers, runs its local experts on the tokens
routed to them, and a reduce-scatter returns each token's combined output to
the rank that owns it.  Expert weights are tagged ``expert_parallel`` so the
gradient reduction averages them over the expert-data-parallel group only.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

from minitron.parallel import comm, mappings, state
from minitron.parallel.random import init_master_weight


class MoEAuxLossAutoScaler(torch.autograd.Function):
    """Attach an auxiliary loss's gradient to an activation's backward pass.

    Pipeline stages other than the last never see the LM loss, so the aux
    loss cannot simply be added to it; instead its gradient (scaled like the
    main loss) is injected when the activation's gradient flows back.
    """

    main_loss_scale = 1.0

    @staticmethod
    def forward(ctx, output, aux_loss):
        ctx.save_for_backward(aux_loss)
        return output

    @staticmethod
    def backward(ctx, grad_output):
        (aux_loss,) = ctx.saved_tensors
        return grad_output, torch.ones_like(aux_loss) * MoEAuxLossAutoScaler.main_loss_scale


class TopKRouter(nn.Module):
    """Softmax router choosing ``topk`` experts per token."""

    def __init__(self, config, layer_number):
        super().__init__()
        self.topk = config.moe_router_topk
        self.num_experts = config.num_experts
        self.aux_loss_coeff = config.moe_aux_loss_coeff
        self.weight = nn.Parameter(init_master_weight(
            (config.num_experts, config.hidden_size),
            f"layers.{layer_number}.mlp.router.weight", config.init_method_std))

    def load_balancing_loss(self, probs, top_indices):
        """Switch-transformer loss: E * sum_e(fraction routed to e * mean prob of e)."""
        routed = F.one_hot(top_indices, self.num_experts).sum(dim=1).float()
        fraction = routed.mean(dim=0) / self.topk
        return self.num_experts * torch.sum(fraction * probs.mean(dim=0))

    def forward(self, tokens):
        """tokens [T, h] -> (weights [T, k], expert indices [T, k], aux loss)."""
        logits = F.linear(tokens, self.weight).float()
        probs = torch.softmax(logits, dim=-1)
        top_probs, top_indices = torch.topk(probs, self.topk, dim=-1)
        weights = top_probs / top_probs.sum(dim=-1, keepdim=True)
        aux = self.aux_loss_coeff * self.load_balancing_loss(probs, top_indices)
        return weights, top_indices, aux


class Expert(nn.Module):
    """A dense GeLU MLP owned by exactly one expert-parallel rank."""

    def __init__(self, config, layer_number, expert_id):
        super().__init__()
        prefix = f"layers.{layer_number}.mlp.experts.{expert_id}"
        self.fc1 = nn.Parameter(init_master_weight(
            (config.ffn_hidden_size, config.hidden_size), prefix + ".fc1",
            config.init_method_std))
        self.fc2 = nn.Parameter(init_master_weight(
            (config.hidden_size, config.ffn_hidden_size), prefix + ".fc2",
            config.output_layer_init_std))
        for param in (self.fc1, self.fc2):
            param.expert_parallel = True

    def forward(self, x):
        return F.linear(F.gelu(F.linear(x, self.fc1)), self.fc2)


class MoELayer(nn.Module):
    def __init__(self, config, layer_number):
        super().__init__()
        self.config = config
        ep_size = state.get_expert_model_parallel_world_size()
        ep_rank = state.get_expert_model_parallel_rank()
        self.num_local_experts = config.num_experts // ep_size
        self.local_expert_offset = ep_rank * self.num_local_experts
        self.router = TopKRouter(config, layer_number)
        self.experts = nn.ModuleList(
            Expert(config, layer_number, self.local_expert_offset + i)
            for i in range(self.num_local_experts))

    def _ep_group(self):
        return state.get_expert_model_parallel_group() if state.is_initialized() else None

    def dispatch(self, tokens, weights, indices):
        """Gather tokens and routing decisions from all ep peers."""
        group = self._ep_group()
        tokens = mappings.gather_with_reduce_scatter_grad(tokens, 0, group)
        weights = mappings.gather_with_reduce_scatter_grad(weights, 0, group)
        indices = comm.all_gather(indices.float(), 0, group).long()
        return tokens, weights, indices

    def run_local_experts(self, tokens, weights, indices):
        output = torch.zeros_like(tokens)
        for local_id, expert in enumerate(self.experts):
            expert_id = self.local_expert_offset + local_id
            token_ids, slot = torch.nonzero(indices == expert_id, as_tuple=True)
            if token_ids.numel() == 0:
                continue
            gate = weights[token_ids, slot].unsqueeze(-1).to(tokens.dtype)
            output = output.index_add(0, token_ids, gate * expert(tokens[token_ids]))
        return output

    def combine(self, output):
        """Sum expert outputs over ep peers and keep this rank's tokens."""
        return mappings.reduce_scatter_with_gather_grad(output, 0, self._ep_group())

    def forward(self, hidden_states):
        s, b, h = hidden_states.shape
        tokens = hidden_states.reshape(s * b, h)
        weights, indices, aux_loss = self.router(tokens)
        all_tokens, all_weights, all_indices = self.dispatch(tokens, weights, indices)
        output = self.combine(self.run_local_experts(all_tokens, all_weights, all_indices))
        output = output.view(s, b, h)
        if self.config.moe_aux_loss_coeff > 0 and self.training:
            output = MoEAuxLossAutoScaler.apply(output, aux_loss)
        return output
