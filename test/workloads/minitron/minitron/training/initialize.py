"""Process start-up: torch.distributed (gloo), parallel groups, seeds, threads.

Ranks read the torchrun-style environment (RANK, WORLD_SIZE, MASTER_ADDR,
MASTER_PORT) set by :mod:`minitron.launch`; a bare single-process run picks a
free local port itself so ``python -m minitron.train`` works without a
launcher.
"""

import os
import socket

import torch
import torch.distributed as dist

from minitron.parallel import state
from minitron.parallel.random import set_global_seed


def find_free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def initialize_distributed():
    """Join (or create) the default gloo process group; returns (rank, world)."""
    if dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    addr = os.environ.get("MASTER_ADDR", "127.0.0.1")
    port = os.environ.get("MASTER_PORT") or str(find_free_port())
    dist.init_process_group("gloo", init_method=f"tcp://{addr}:{port}",
                            rank=rank, world_size=world)
    return rank, world


def initialize_megatron(args):
    """Everything that must happen before the model is built."""
    # One intra-op thread per rank keeps CPU runs reproducible and lets N
    # ranks share the cores without oversubscription.
    torch.set_num_threads(1)
    initialize_distributed()
    state.initialize_model_parallel(
        args.tensor_model_parallel_size, args.pipeline_model_parallel_size,
        args.context_parallel_size, args.expert_model_parallel_size,
        args.virtual_pipeline_model_parallel_size)
    set_global_seed(args.seed)
