"""Cross entropy over logits whose vocabulary dimension is split across tp.

Computing the softmax normaliser needs the max and the sum of exponentials
over the *whole* vocabulary, so each is all-reduced; the logit of the target
token lives on exactly one rank and is all-reduced too.  No rank ever
materialises the full [tokens, vocab] logits.
"""

import torch
import torch.distributed as dist

from minitron.parallel import comm, state


class _VocabParallelCrossEntropy(torch.autograd.Function):
    @staticmethod
    def forward(ctx, logits, target, group):
        logits = logits.float()
        logits_max = comm.all_reduce(logits.max(dim=-1)[0], group, op=dist.ReduceOp.MAX)
        shifted = logits - logits_max.unsqueeze(-1)

        per_rank = shifted.size(-1)
        start = comm.group_rank(group) * per_rank
        end = start + per_rank
        outside = (target < start) | (target >= end)
        local_target = (target - start).masked_fill(outside, 0)

        flat = shifted.view(-1, per_rank)
        rows = torch.arange(flat.size(0))
        predicted = flat[rows, local_target.view(-1)].clone().view_as(target)
        predicted = predicted.masked_fill(outside, 0.0)
        predicted = comm.all_reduce(predicted, group)

        exp_logits = shifted.exp()
        sum_exp = comm.all_reduce(exp_logits.sum(dim=-1), group)
        loss = sum_exp.log() - predicted

        softmax = exp_logits / sum_exp.unsqueeze(-1)
        ctx.save_for_backward(softmax, outside, local_target)
        return loss

    @staticmethod
    def backward(ctx, grad_output):
        softmax, outside, local_target = ctx.saved_tensors
        grad = softmax.clone()
        flat = grad.view(-1, grad.size(-1))
        rows = torch.arange(flat.size(0))
        flat[rows, local_target.view(-1)] -= (~outside).view(-1).float()
        return grad * grad_output.unsqueeze(-1), None, None


def vocab_parallel_cross_entropy(logits, target):
    """Per-token loss for [..., vocab/tp] logits and [...] integer targets."""
    group = state.get_tensor_model_parallel_group() if state.is_initialized() else None
    return _VocabParallelCrossEntropy.apply(logits, target, group)
