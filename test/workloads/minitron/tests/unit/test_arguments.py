"""Argument parsing, derived defaults, and Megatron's validation rules."""

import pytest

from minitron.config import ConfigError, parse_args

BASE = ["--num-layers", "4", "--hidden-size", "64", "--num-attention-heads", "4",
        "--seq-length", "32", "--micro-batch-size", "2"]


def parse(*extra, world_size=1):
    return parse_args(BASE + list(extra), world_size=world_size)


class TestDefaults:
    def test_ffn_defaults_to_four_times_hidden(self):
        assert parse().ffn_hidden_size == 256

    def test_query_groups_default_to_heads(self):
        assert parse().num_query_groups == 4

    def test_max_position_defaults_to_seq_length(self):
        assert parse().max_position_embeddings == 32

    def test_global_batch_defaults_to_micro_times_dp(self):
        assert parse(world_size=2).global_batch_size == 4

    def test_lr_decay_iters_defaults_to_train_iters(self):
        assert parse("--train-iters", "17").lr_decay_iters == 17


class TestDerived:
    def test_data_parallel_size(self):
        args = parse("--tensor-model-parallel-size", "2", world_size=8)
        assert args.data_parallel_size == 4

    def test_num_micro_batches(self):
        args = parse("--global-batch-size", "16", world_size=2)
        assert args.num_micro_batches == 4

    def test_virtual_pipeline_size(self):
        args = parse("--pipeline-model-parallel-size", "2",
                     "--num-layers-per-virtual-pipeline-stage", "1", world_size=2)
        assert args.virtual_pipeline_model_parallel_size == 2

    def test_bare_flags(self):
        args = parse("--tensor-model-parallel-size", "2", "--sequence-parallel",
                     "--use-distributed-optimizer", "--bf16", world_size=4)
        assert args.sequence_parallel and args.use_distributed_optimizer and args.bf16


@pytest.mark.parametrize("extra, world_size, message", [
    (["--pipeline-model-parallel-size", "3"], 3, "divisible by pipeline"),
    (["--tensor-model-parallel-size", "3"], 3, "heads"),
    (["--num-query-groups", "1", "--tensor-model-parallel-size", "2"], 2, "query groups"),
    (["--pipeline-model-parallel-size", "2", "--num-layers-per-virtual-pipeline-stage", "3"],
     2, "virtual"),
    (["--num-layers-per-virtual-pipeline-stage", "1"], 1, "virtual"),
    (["--sequence-parallel"], 1, "sequence-parallel"),
    (["--context-parallel-size", "2", "--seq-length", "30", "--max-position-embeddings", "32"],
     2, "2 x context"),
    (["--global-batch-size", "6"], 2, "global batch"),
    (["--num-experts", "3", "--expert-model-parallel-size", "2"], 2, "experts"),
    (["--expert-model-parallel-size", "2"], 2, "num-experts"),
    (["--bf16", "--fp16"], 1, "mutually exclusive"),
    (["--tensor-model-parallel-size", "2"], 3, "not divisible"),
    (["--seq-length", "64", "--max-position-embeddings", "32"], 1, "max position"),
])
def test_invalid_configurations_are_rejected(extra, world_size, message):
    with pytest.raises(ConfigError, match=message):
        parse(*extra, world_size=world_size)


@pytest.mark.parametrize("tp, pp, cp, world", [(1, 1, 1, 1), (2, 1, 1, 2), (2, 2, 1, 4),
                                              (1, 2, 2, 8), (2, 1, 2, 8)])
def test_valid_layouts_are_accepted(tp, pp, cp, world):
    args = parse("--tensor-model-parallel-size", str(tp), "--pipeline-model-parallel-size",
                 str(pp), "--context-parallel-size", str(cp), world_size=world)
    assert args.data_parallel_size * tp * pp * cp == world
