"""Spawn a small gloo process group and run a test body on every rank.

The body is a module-level function ``fn(rank, world_size, *args)`` (so it
can be pickled into spawned children); it builds whatever model-parallel
layout it needs and asserts on its own rank.  Any failing rank fails the
test via torch.multiprocessing's exception propagation.
"""

import os

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def _entry(rank, world_size, port, fn, args):
    torch.set_num_threads(1)
    os.environ["WORLD_SIZE"] = str(world_size)
    store = dist.TCPStore("127.0.0.1", port, world_size, False)
    dist.init_process_group("gloo", store=store, rank=rank, world_size=world_size)
    try:
        fn(rank, world_size, *args)
    finally:
        dist.destroy_process_group()


def run_distributed(fn, world_size=2, *args):
    # The store's server listens before any rank starts. With a tcp://
    # init_method rank 0 opens it, and a rank that connects first retries a
    # whole second later (c10d's connect): +1 s in a quarter of the runs.
    store = dist.TCPStore("127.0.0.1", 0, world_size, True, wait_for_workers=False)
    mp.spawn(_entry, args=(world_size, store.port, fn, args), nprocs=world_size, join=True)
