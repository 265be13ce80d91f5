"""Model, data, context and expert parallelism on top of torch.distributed."""
