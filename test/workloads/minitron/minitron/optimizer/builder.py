"""Construct the optimizer selected by the command line."""

from minitron.optimizer.adam import AdamHyperParams
from minitron.optimizer.buckets import build_buckets
from minitron.optimizer.distributed import DistributedOptimizer
from minitron.optimizer.grad_scaler import DynamicGradScaler
from minitron.optimizer.optimizer import FP32Optimizer


def build_optimizer(args, model_chunks):
    hp = AdamHyperParams(args.adam_beta1, args.adam_beta2, args.adam_eps, args.weight_decay)
    scaler = None
    if args.fp16:
        scaler = DynamicGradScaler(args.initial_loss_scale, args.loss_scale_window)
    cls = DistributedOptimizer if args.use_distributed_optimizer else FP32Optimizer
    return cls(model_chunks, build_buckets(model_chunks), hp, args.clip_grad, scaler)
