"""Shared fixtures for minitron unit tests.

Most tests run in-process on a one-rank gloo group (so collectives are
no-ops but every code path that queries process groups works); tests that
need real communication spawn 2 ranks through ``distributed_utils``.
"""

import os
import sys

import pytest
import torch
import torch.distributed as dist

WORKLOAD_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
if WORKLOAD_ROOT not in sys.path:
    sys.path.insert(0, WORKLOAD_ROOT)

from minitron.config import parse_args  # noqa: E402
from minitron.model import TransformerConfig  # noqa: E402
from minitron.parallel import state  # noqa: E402
from minitron.parallel.random import set_global_seed  # noqa: E402
from minitron.training.initialize import find_free_port  # noqa: E402


@pytest.fixture(scope="session", autouse=True)
def single_rank_group():
    """A 1-rank default process group for the whole session."""
    torch.set_num_threads(1)
    if not dist.is_initialized():
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{find_free_port()}",
                                rank=0, world_size=1)
    yield
    state.destroy_model_parallel()


@pytest.fixture
def model_parallel_state():
    """Fresh trivial (all sizes 1) model-parallel state, seeded."""
    state.initialize_model_parallel()
    set_global_seed(1234)
    yield
    state.destroy_model_parallel()


@pytest.fixture
def tiny_config():
    return TransformerConfig(num_layers=2, hidden_size=32, ffn_hidden_size=64,
                             num_attention_heads=4, num_query_groups=2, seq_length=16,
                             max_position_embeddings=16, vocab_size=256)


@pytest.fixture
def base_argv():
    return ["--num-layers", "2", "--hidden-size", "32", "--num-attention-heads", "4",
            "--seq-length", "16", "--micro-batch-size", "2", "--global-batch-size", "4",
            "--train-iters", "4", "--lr", "0.002", "--num-documents", "300",
            "--eval-interval", "1000"]


@pytest.fixture
def make_args(base_argv):
    def _make(*extra, world_size=1):
        return parse_args(base_argv + list(extra), world_size=world_size)
    return _make
