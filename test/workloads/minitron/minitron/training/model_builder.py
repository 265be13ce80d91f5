"""Build this rank's model chunks for its pipeline (and virtual pipeline) stage."""

from minitron.model import GPTModel, TransformerConfig
from minitron.model.gpt import layers_for_chunk
from minitron.parallel import state


def build_model(args):
    """List of GPTModel chunks (one unless virtual pipelining is on)."""
    config = TransformerConfig.from_args(args)
    pp = state.get_pipeline_model_parallel_world_size()
    pp_rank = state.get_pipeline_model_parallel_rank()
    num_chunks = args.virtual_pipeline_model_parallel_size or 1
    last_virtual = pp * num_chunks - 1
    chunks = []
    for chunk in range(num_chunks):
        virtual = chunk * pp + pp_rank
        layers = layers_for_chunk(args.num_layers, pp, pp_rank,
                                  args.num_layers_per_virtual_pipeline_stage, chunk)
        chunks.append(GPTModel(config, layers, pre_process=virtual == 0,
                               post_process=virtual == last_virtual))
    return chunks


def count_parameters(model_chunks):
    return sum(p.numel() for chunk in model_chunks for p in chunk.parameters())
