"""Spawn a small gloo process group and run a test body on every rank.

The body is a module-level function ``fn(rank, world_size, *args)`` (so it
can be pickled into spawned children); it builds whatever model-parallel
layout it needs and asserts on its own rank.  Any failing rank fails the
test via torch.multiprocessing's exception propagation.
"""

import os
import socket

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def _free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _entry(rank, world_size, port, fn, args):
    torch.set_num_threads(1)
    os.environ["WORLD_SIZE"] = str(world_size)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}",
                            rank=rank, world_size=world_size)
    try:
        fn(rank, world_size, *args)
    finally:
        dist.destroy_process_group()


def run_distributed(fn, world_size=2, *args):
    mp.spawn(_entry, args=(world_size, _free_port(), fn, args), nprocs=world_size, join=True)
