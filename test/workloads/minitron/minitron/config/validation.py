"""Consistency checks between parallel sizes and model shapes.

These are the constraints Megatron-LM enforces in ``validate_args``; catching
them at parse time gives a readable error instead of a shape mismatch deep
inside a collective.
"""


class ConfigError(ValueError):
    """Raised when a combination of flags cannot be trained."""


def _require(condition, message):
    if not condition:
        raise ConfigError(message)


def _validate_world(args):
    tp = args.tensor_model_parallel_size
    pp = args.pipeline_model_parallel_size
    cp = args.context_parallel_size
    for name, size in (("tensor", tp), ("pipeline", pp), ("context", cp),
                       ("expert", args.expert_model_parallel_size)):
        _require(size >= 1, f"{name} model parallel size must be >= 1, got {size}")
    model_parallel = tp * pp * cp
    _require(args.world_size % model_parallel == 0,
             f"world size ({args.world_size}) is not divisible by tensor ({tp}) x "
             f"pipeline ({pp}) x context ({cp}) parallel sizes")
    _require(args.world_size == model_parallel * args.data_parallel_size,
             "world size must equal tp x pp x cp x dp")


def _validate_layers(args):
    pp = args.pipeline_model_parallel_size
    _require(args.num_layers % pp == 0,
             f"number of layers ({args.num_layers}) must be divisible by pipeline "
             f"model parallel size ({pp})")
    if args.num_layers_per_virtual_pipeline_stage is not None:
        _require(pp > 1, "virtual pipeline parallelism requires pipeline parallel size > 1")
        per_stage = args.num_layers // pp
        _require(per_stage % args.num_layers_per_virtual_pipeline_stage == 0,
                 "number of layers per pipeline stage must be divisible by "
                 "--num-layers-per-virtual-pipeline-stage")


def _validate_attention(args):
    tp = args.tensor_model_parallel_size
    _require(args.hidden_size % args.num_attention_heads == 0,
             "hidden size must be divisible by the number of attention heads")
    _require(args.num_attention_heads % tp == 0,
             f"number of attention heads ({args.num_attention_heads}) must be divisible "
             f"by tensor model parallel size ({tp})")
    _require(args.num_attention_heads % args.num_query_groups == 0,
             "number of attention heads must be divisible by the number of query groups")
    _require(args.num_query_groups % tp == 0,
             f"number of query groups ({args.num_query_groups}) must be divisible by "
             f"tensor model parallel size ({tp})")
    _require(args.ffn_hidden_size % tp == 0, "ffn hidden size must be divisible by tp")
    _require(args.vocab_size % tp == 0, "vocab size must be divisible by tp")


def _validate_sequence(args):
    tp = args.tensor_model_parallel_size
    cp = args.context_parallel_size
    _require(args.seq_length <= args.max_position_embeddings,
             "seq length must not exceed max position embeddings")
    if args.sequence_parallel:
        _require(tp > 1, "--sequence-parallel requires tensor model parallel size > 1")
        _require(args.seq_length % tp == 0,
                 f"seq length ({args.seq_length}) must be divisible by tensor model "
                 f"parallel size ({tp}) when using sequence parallelism")
    if cp > 1:
        _require(args.seq_length % (2 * cp) == 0,
                 f"seq length ({args.seq_length}) must be divisible by 2 x context "
                 f"parallel size ({2 * cp})")


def _validate_batch(args):
    dp = args.data_parallel_size
    _require(args.micro_batch_size >= 1, "micro batch size must be >= 1")
    _require(args.global_batch_size % (args.micro_batch_size * dp) == 0,
             f"global batch size ({args.global_batch_size}) must be divisible by micro "
             f"batch size ({args.micro_batch_size}) x data parallel size ({dp})")


def _validate_moe(args):
    ep = args.expert_model_parallel_size
    if args.num_experts is None:
        _require(ep == 1, "--expert-model-parallel-size > 1 requires --num-experts")
        return
    _require(args.num_experts % ep == 0,
             f"number of experts ({args.num_experts}) must be divisible by expert model "
             f"parallel size ({ep})")
    _require(args.data_parallel_size % ep == 0,
             "expert model parallel size must divide the data parallel size")
    _require(1 <= args.moe_router_topk <= args.num_experts,
             "--moe-router-topk must be between 1 and --num-experts")
    _require(args.tensor_model_parallel_size == 1,
             "minitron's MoE layer does not support tensor parallelism")


def _validate_precision_and_schedule(args):
    _require(not (args.bf16 and args.fp16), "--bf16 and --fp16 are mutually exclusive")
    _require(args.min_lr <= args.lr, "--min-lr must not exceed --lr")
    if args.save_interval is not None:
        _require(args.save is not None, "--save-interval requires --save")


def validate_args(args):
    """Raise :class:`ConfigError` if ``args`` violates a Megatron constraint."""
    _validate_world(args)
    _validate_layers(args)
    _validate_attention(args)
    _validate_sequence(args)
    _validate_batch(args)
    _validate_moe(args)
    _validate_precision_and_schedule(args)
    return args
