"""Two-rank gloo tests: each parallel scheme must reproduce single-rank math.

Every body runs on both ranks, builds the sharded computation and compares
it with the unsharded reference computed locally from the same seed.
"""

import pytest
import torch
import torch.nn.functional as F

from distributed_utils import run_distributed

pytestmark = pytest.mark.distributed


def _setup(tp=1, pp=1, cp=1, ep=1, vp=None, seed=1234):
    from minitron.parallel import state
    from minitron.parallel.random import set_global_seed
    state.initialize_model_parallel(tp, pp, cp, ep, vp)
    set_global_seed(seed)


def _tiny_config(**kw):
    from minitron.model import TransformerConfig
    cfg = dict(num_layers=2, hidden_size=32, ffn_hidden_size=64, num_attention_heads=4,
               num_query_groups=2, seq_length=16, max_position_embeddings=16, vocab_size=256)
    cfg.update(kw)
    return TransformerConfig(**cfg)


def _column_row_body(rank, world):
    from minitron.parallel.layers import ColumnParallelLinear, RowParallelLinear
    from minitron.parallel.random import init_master_weight
    _setup(tp=2)
    col = ColumnParallelLinear(8, 6, "t.col", 0.5, bias=False)
    row = RowParallelLinear(6, 8, "t.row", 0.5, bias=False)
    x = torch.randn(3, 8, generator=torch.Generator().manual_seed(0), requires_grad=True)
    out = row(F.gelu(col(x)))
    out.sum().backward()
    w1 = init_master_weight((6, 8), "t.col.weight", 0.5).requires_grad_()
    w2 = init_master_weight((8, 6), "t.row.weight", 0.5).requires_grad_()
    x_ref = x.detach().clone().requires_grad_()
    ref = F.linear(F.gelu(F.linear(x_ref, w1)), w2)
    ref.sum().backward()
    assert torch.allclose(out, ref, atol=1e-5)
    assert torch.allclose(x.grad, x_ref.grad, atol=1e-5)
    assert torch.allclose(col.weight.grad, w1.grad[rank * 3:(rank + 1) * 3], atol=1e-5)


@pytest.mark.fastci(scope=["tp"], workload={"--tensor-model-parallel-size": 2})
def test_column_then_row_parallel_equals_dense():
    run_distributed(_column_row_body, 2)


def _vocab_body(rank, world):
    from minitron.parallel.cross_entropy import vocab_parallel_cross_entropy
    from minitron.parallel.layers import VocabParallelEmbedding
    from minitron.parallel.random import init_master_weight
    _setup(tp=2)
    emb = VocabParallelEmbedding(16, 4, "t.emb", 1.0)
    ids = torch.tensor([[0, 7, 8, 15]])
    master = init_master_weight((16, 4), "t.emb.weight", 1.0)
    assert torch.allclose(emb(ids), F.embedding(ids, master), atol=1e-6)

    full = torch.randn(5, 16, generator=torch.Generator().manual_seed(1))
    target = torch.tensor([0, 7, 8, 15, 3])
    local = full[:, rank * 8:(rank + 1) * 8].clone().requires_grad_()
    loss = vocab_parallel_cross_entropy(local, target)
    ref_in = full.clone().requires_grad_()
    ref = F.cross_entropy(ref_in, target, reduction="none")
    assert torch.allclose(loss, ref, atol=1e-5)
    loss.sum().backward()
    ref.sum().backward()
    assert torch.allclose(local.grad, ref_in.grad[:, rank * 8:(rank + 1) * 8], atol=1e-5)


def test_vocab_parallel_embedding_and_cross_entropy():
    run_distributed(_vocab_body, 2)


def _gpt_loss_and_grads(model_kwargs, setup_kwargs, batch, with_cp=False):
    """Loss and embedding-gradient norm of a one-chunk GPT under a layout."""
    from minitron.model import GPTModel
    from minitron.parallel import state
    from minitron.parallel.context_parallel import get_batch_on_this_cp_rank
    from minitron.parallel import comm
    _setup(**setup_kwargs)
    model = GPTModel(_tiny_config(**model_kwargs))
    local = get_batch_on_this_cp_rank(batch, state.get_context_parallel_world_size(),
                                      state.get_context_parallel_rank())
    loss = model(local["tokens"], local["position_ids"], local["labels"]).mean()
    loss.backward()
    loss = comm.all_reduce(loss.detach(), state.get_context_parallel_group()) / \
        state.get_context_parallel_world_size()
    return loss.item(), model


def _batch():
    gen = torch.Generator().manual_seed(5)
    return {"tokens": torch.randint(0, 256, (2, 16), generator=gen),
            "labels": torch.randint(0, 256, (2, 16), generator=gen)}


@pytest.mark.parametrize("layout", ["tp", "sp", "cp"])
def test_gpt_forward_matches_single_rank(layout):
    run_distributed(_gpt_layout_body, 2, layout)


def _gpt_layout_body(rank, world, layout):
    from minitron.model import GPTModel
    setups = {"tp": ({}, {"tp": 2}), "sp": ({"sequence_parallel": True}, {"tp": 2}),
              "cp": ({}, {"cp": 2})}
    model_kwargs, setup_kwargs = setups[layout]
    loss, _ = _gpt_loss_and_grads(model_kwargs, setup_kwargs, _batch())
    # Reference: the same seed on a trivial layout in this very process.
    from minitron.parallel import state
    state.destroy_model_parallel()
    from minitron.parallel.random import set_global_seed
    set_global_seed(1234)
    ref_model = GPTModel(_tiny_config())
    b = _batch()
    ref = ref_model(b["tokens"], torch.arange(16), b["labels"]).mean().item()
    assert abs(loss - ref) < 1e-5, (layout, loss, ref)


def _sequence_parallel_grads_body(rank, world):
    from minitron.optimizer.buckets import allreduce_sequence_parallel_grads
    from minitron.parallel import comm, state
    _, model = _gpt_loss_and_grads({"sequence_parallel": True}, {"tp": 2}, _batch())
    allreduce_sequence_parallel_grads([model])
    group = state.get_tensor_model_parallel_group()
    # Parameters not split over tp are replicated on every tp rank. Those
    # used inside the sequence-parallel region saw half of the sequence on
    # each rank; after the reduction every rank must hold the same, full
    # gradient, or the replicas drift apart.
    replicated = [(n, p) for n, p in model.named_parameters()
                  if not getattr(p, "tensor_model_parallel", False) and p.grad is not None]
    assert any("norm" in n for n, _ in replicated), [n for n, _ in replicated]
    for name, param in replicated:
        mean = comm.all_reduce(param.grad.clone(), group) / world
        assert torch.allclose(param.grad, mean, atol=1e-7), name


@pytest.mark.fastci(scope=["tp", "sp"], workload={"--tensor-model-parallel-size": 2})
def test_sequence_parallel_replicated_grads_agree_across_tp():
    run_distributed(_sequence_parallel_grads_body, 2)


def _train_losses(argv_extra, world):
    from minitron.config import parse_args
    from minitron.training.loop import pretrain
    argv = ["--num-layers", "2", "--hidden-size", "32", "--num-attention-heads", "4",
            "--seq-length", "16", "--micro-batch-size", "2", "--global-batch-size", "8",
            "--train-iters", "3", "--num-documents", "300", "--lr", "0.003"] + argv_extra
    logger = pretrain(parse_args(argv, world_size=world))
    return logger.to_dict()["lm loss"]["values"]


def _training_layout_body(rank, world, extra, reference):
    losses = _train_losses(extra, world)
    for step, value in reference.items():
        assert abs(losses[step] - value) < 1e-4 * abs(value), (extra, step, losses, reference)


def _reference_losses(extra=()):
    from minitron.training.loop import pretrain  # noqa: F401 (import check)
    return _REFERENCE.setdefault(tuple(extra), _train_losses(list(extra), 1))


_REFERENCE = {}


@pytest.mark.parametrize("extra", [
    ["--pipeline-model-parallel-size", "2"],
    ["--pipeline-model-parallel-size", "2", "--num-layers-per-virtual-pipeline-stage", "1"],
    ["--use-distributed-optimizer"],
])
@pytest.mark.fastci(scope=["pp", "dp", "dist_optimizer"], workload={"--train-iters": 3})
def test_training_layouts_match_single_rank(extra):
    reference = _reference_losses()
    run_distributed(_training_layout_body, 2, extra, reference)


def test_expert_parallel_matches_single_rank():
    moe = ["--num-experts", "4", "--moe-router-topk", "2"]
    reference = _reference_losses(moe)
    run_distributed(_training_layout_body, 2, moe + ["--expert-model-parallel-size", "2"],
                    reference)
