"""Seeding and parallelism-invariant weight initialisation.

Megatron can initialise every weight as a full "master" tensor on CPU and
then keep only the local shard, so a model sharded 2-way starts from exactly
the same numbers as an unsharded one.  minitron always does that, and derives
each parameter's generator from the global seed and the parameter's *global*
name, so pipeline stages that construct different layers (in different
orders) still agree with a single-stage run.
"""

import random
import zlib

import numpy as np
import torch

_GLOBAL_SEED = [1234]


def set_global_seed(seed):
    """Seed python, numpy and torch and remember the seed for weight init."""
    _GLOBAL_SEED[0] = int(seed)
    random.seed(seed)
    np.random.seed(seed % (2 ** 32))
    torch.manual_seed(seed)


def get_global_seed():
    return _GLOBAL_SEED[0]


def parameter_generator(key):
    """A torch.Generator determined by the global seed and ``key`` alone."""
    gen = torch.Generator()
    gen.manual_seed((_GLOBAL_SEED[0] * 1000003 + zlib.crc32(key.encode())) % (2 ** 63))
    return gen


def init_master_weight(shape, key, std):
    """Normal(0, std) tensor of the full (unsharded) ``shape``."""
    return torch.empty(shape).normal_(0.0, std, generator=parameter_generator(key))


def get_rng_state():
    """Everything needed to continue the random streams after a resume."""
    return {
        "python": random.getstate(),
        "numpy": np.random.get_state(),
        "torch": torch.get_rng_state(),
        "seed": _GLOBAL_SEED[0],
    }


def set_rng_state(state):
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    _GLOBAL_SEED[0] = state["seed"]
