"""Blocking point-to-point transfers of activations between pipeline stages.

Activations always travel in fp32 (gloo has no bf16 send); the receiver
allocates a buffer of the statically known shape, as Megatron does when
``variable_seq_lengths`` is off.
"""

import torch
import torch.distributed as dist

from minitron.parallel import state


def send_forward(tensor):
    dist.send(tensor.detach().float().contiguous(),
              dst=state.get_pipeline_model_parallel_next_rank())


def recv_forward(shape):
    buf = torch.empty(shape)
    dist.recv(buf, src=state.get_pipeline_model_parallel_prev_rank())
    return buf.requires_grad_()


def send_backward(grad):
    dist.send(grad.float().contiguous(), dst=state.get_pipeline_model_parallel_prev_rank())


def recv_backward(shape):
    buf = torch.empty(shape)
    dist.recv(buf, src=state.get_pipeline_model_parallel_next_rank())
    return buf
