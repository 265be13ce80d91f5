"""Forward/backward schedules: no pipelining, and GPipe-style pipelining with
optional virtual (interleaved) stages.

With ``vp`` model chunks per rank, virtual stage ``v = chunk * pp + pp_rank``
runs on pipeline rank ``v % pp``; activations flow rank 0 -> 1 -> ... -> pp-1
and wrap back to rank 0 for the next chunk.  All micro-batches run forward
first, then backward in reverse order, so every pair of ranks exchanges
messages in the same order on both sides and blocking gloo send/recv cannot
deadlock.
"""

import torch

from minitron.model.moe import MoEAuxLossAutoScaler
from minitron.parallel import state
from minitron.training.forward_step import forward_step, prepare_batch
from minitron.training import p2p


def activation_shape(args):
    seq = args.seq_length // args.context_parallel_size
    if args.sequence_parallel:
        seq //= args.tensor_model_parallel_size
    return (seq, args.micro_batch_size, args.hidden_size)


def _scaled(loss, num_micro_batches, loss_scale):
    return loss * (loss_scale / num_micro_batches)


def forward_backward_no_pipelining(model_chunks, micro_batches, args, loss_scale=1.0,
                                   forward_only=False):
    """Gradient accumulation over micro-batches on a single stage."""
    model = model_chunks[0]
    num_mb = len(micro_batches)
    MoEAuxLossAutoScaler.main_loss_scale = loss_scale / num_mb
    losses = []
    for batch in micro_batches:
        loss = forward_step(model, prepare_batch(batch), True, args.bf16)
        if not forward_only:
            _scaled(loss, num_mb, loss_scale).backward()
        losses.append(loss.detach())
    return losses


def forward_backward_pipelining(model_chunks, micro_batches, args, loss_scale=1.0,
                                forward_only=False):
    """GPipe schedule over ``len(model_chunks)`` virtual stages per rank.

    Returns the per-micro-batch losses on the last stage, [] elsewhere.
    """
    pp = state.get_pipeline_model_parallel_world_size()
    pp_rank = state.get_pipeline_model_parallel_rank()
    num_chunks = len(model_chunks)
    last_virtual = pp * num_chunks - 1
    shape = activation_shape(args)
    num_mb = len(micro_batches)
    MoEAuxLossAutoScaler.main_loss_scale = loss_scale / num_mb
    batches = [prepare_batch(b) for b in micro_batches]
    saved, losses = {}, []

    for m, batch in enumerate(batches):
        for chunk_id, model in enumerate(model_chunks):
            virtual = chunk_id * pp + pp_rank
            input_tensor = None if virtual == 0 else p2p.recv_forward(shape)
            model.set_input_tensor(input_tensor)
            is_last = virtual == last_virtual
            output = forward_step(model, batch, is_last, args.bf16)
            if is_last:
                losses.append(output.detach())
            else:
                p2p.send_forward(output)
            if not forward_only:
                saved[(m, chunk_id)] = (input_tensor, output)

    if forward_only:
        return losses

    for m in reversed(range(num_mb)):
        for chunk_id in reversed(range(num_chunks)):
            virtual = chunk_id * pp + pp_rank
            input_tensor, output = saved.pop((m, chunk_id))
            if virtual == last_virtual:
                _scaled(output, num_mb, loss_scale).backward()
            else:
                grad = p2p.recv_backward(shape).to(output.dtype)
                torch.autograd.backward(output, grad_tensors=grad)
            if virtual != 0:
                p2p.send_backward(input_tensor.grad)
    return losses


def get_forward_backward_func(args):
    if args.pipeline_model_parallel_size > 1:
        return forward_backward_pipelining
    return forward_backward_no_pipelining
