"""Megatron-style argument parser.

The flag names deliberately mirror Megatron-LM's ``arguments.py`` so that
functional-test manifests written for Megatron (``MODEL_ARGS`` maps of flag ->
value) can drive minitron unchanged.  Parsing is split into small groups the
way Megatron does it, and derived quantities (data-parallel size, number of
micro-batches, head dim) are filled in after validation so the rest of the
code never recomputes them.
"""

import argparse
import os

from minitron.config.validation import validate_args


def _add_network_args(parser):
    group = parser.add_argument_group("network size")
    group.add_argument("--num-layers", type=int, default=2)
    group.add_argument("--hidden-size", type=int, default=64)
    group.add_argument("--ffn-hidden-size", type=int, default=None,
                       help="Defaults to 4 * hidden size, as in Megatron.")
    group.add_argument("--num-attention-heads", type=int, default=4)
    group.add_argument("--num-query-groups", type=int, default=None,
                       help="Grouped-query attention groups; defaults to the head count (MHA).")
    group.add_argument("--seq-length", type=int, default=32)
    group.add_argument("--max-position-embeddings", type=int, default=None)
    group.add_argument("--vocab-size", type=int, default=256)
    group.add_argument("--norm-epsilon", type=float, default=1e-5)
    group.add_argument("--init-method-std", type=float, default=0.02)
    group.add_argument("--num-experts", type=int, default=None)
    group.add_argument("--moe-router-topk", type=int, default=2)
    group.add_argument("--moe-aux-loss-coeff", type=float, default=0.0)


def _add_training_args(parser):
    group = parser.add_argument_group("training")
    group.add_argument("--micro-batch-size", type=int, default=2)
    group.add_argument("--global-batch-size", type=int, default=None)
    group.add_argument("--train-iters", type=int, default=10)
    group.add_argument("--exit-interval", type=int, default=None,
                       help="Stop after this iteration (used to split resume tests).")
    group.add_argument("--eval-iters", type=int, default=2)
    group.add_argument("--eval-interval", type=int, default=1000)
    group.add_argument("--log-interval", type=int, default=1)
    group.add_argument("--log-file", type=str, default=None,
                       help="Write per-step losses as Megatron golden-values JSON.")
    group.add_argument("--seed", type=int, default=1234)
    group.add_argument("--bf16", action="store_true")
    group.add_argument("--fp16", action="store_true")
    group.add_argument("--initial-loss-scale", type=float, default=2.0 ** 16)
    group.add_argument("--loss-scale-window", type=int, default=1000)


def _add_optimizer_args(parser):
    group = parser.add_argument_group("optimizer")
    group.add_argument("--lr", type=float, default=1e-3)
    group.add_argument("--min-lr", type=float, default=0.0)
    group.add_argument("--lr-warmup-iters", type=int, default=0)
    group.add_argument("--lr-decay-iters", type=int, default=None)
    group.add_argument("--lr-decay-style", type=str, default="cosine",
                       choices=["constant", "linear", "cosine"])
    group.add_argument("--clip-grad", type=float, default=1.0)
    group.add_argument("--weight-decay", type=float, default=0.01)
    group.add_argument("--adam-beta1", type=float, default=0.9)
    group.add_argument("--adam-beta2", type=float, default=0.999)
    group.add_argument("--adam-eps", type=float, default=1e-8)
    group.add_argument("--use-distributed-optimizer", action="store_true")


def _add_parallel_args(parser):
    group = parser.add_argument_group("parallelism")
    group.add_argument("--tensor-model-parallel-size", type=int, default=1)
    group.add_argument("--pipeline-model-parallel-size", type=int, default=1)
    group.add_argument("--num-layers-per-virtual-pipeline-stage", type=int, default=None)
    group.add_argument("--context-parallel-size", type=int, default=1)
    group.add_argument("--expert-model-parallel-size", type=int, default=1)
    group.add_argument("--sequence-parallel", action="store_true")
    group.add_argument("--distributed-backend", type=str, default="gloo", choices=["gloo"])


def _add_checkpoint_args(parser):
    group = parser.add_argument_group("checkpointing")
    group.add_argument("--save", type=str, default=None)
    group.add_argument("--load", type=str, default=None)
    group.add_argument("--save-interval", type=int, default=None)


def _add_data_args(parser):
    group = parser.add_argument_group("data")
    group.add_argument("--num-documents", type=int, default=2000,
                       help="Size of the generated synthetic corpus.")
    group.add_argument("--split", type=str, default="949,50,1")


def build_parser():
    """Return the argparse parser with every flag group registered."""
    parser = argparse.ArgumentParser(description="minitron arguments", allow_abbrev=False)
    _add_network_args(parser)
    _add_training_args(parser)
    _add_optimizer_args(parser)
    _add_parallel_args(parser)
    _add_checkpoint_args(parser)
    _add_data_args(parser)
    return parser


def _fill_defaults(args):
    # Megatron derives these instead of asking for them; keep the same rules.
    if args.ffn_hidden_size is None:
        args.ffn_hidden_size = 4 * args.hidden_size
    if args.num_query_groups is None:
        args.num_query_groups = args.num_attention_heads
    if args.max_position_embeddings is None:
        args.max_position_embeddings = args.seq_length
    if args.lr_decay_iters is None:
        args.lr_decay_iters = args.train_iters
    if args.global_batch_size is None:
        args.global_batch_size = args.micro_batch_size * args.data_parallel_size
    args.params_dtype = "fp32"
    args.virtual_pipeline_model_parallel_size = None
    if args.num_layers_per_virtual_pipeline_stage is not None:
        args.virtual_pipeline_model_parallel_size = (
            args.num_layers // args.pipeline_model_parallel_size
            // args.num_layers_per_virtual_pipeline_stage)


def parse_args(argv=None, world_size=None):
    """Parse ``argv`` into a validated namespace.

    ``world_size`` defaults to the ``WORLD_SIZE`` environment variable that the
    launcher sets, so the same call works in a single process and under
    ``minitron.launch``.
    """
    args = build_parser().parse_args(argv)
    if world_size is None:
        world_size = int(os.environ.get("WORLD_SIZE", "1"))
    args.world_size = world_size
    model_parallel = (args.tensor_model_parallel_size * args.pipeline_model_parallel_size
                      * args.context_parallel_size)
    args.data_parallel_size = world_size // max(model_parallel, 1)
    _fill_defaults(args)
    validate_args(args)
    args.num_micro_batches = args.global_batch_size // (
        args.micro_batch_size * args.data_parallel_size)
    args.kv_channels = args.hidden_size // args.num_attention_heads
    return args
