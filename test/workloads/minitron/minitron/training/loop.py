"""The pretraining driver: build everything, resume, iterate, evaluate, save.

Mirrors ``megatron.training.pretrain``: the position in the data stream is a
pure function of the iteration (``consumed = iteration * global_batch``), so
a resumed run continues with exactly the batches an uninterrupted run would
have used.
"""

import time

import torch.distributed as dist

from minitron.checkpointing import load_checkpoint, save_checkpoint
from minitron.data.dataset import build_datasets
from minitron.data.sampler import MicroBatchSampler
from minitron.optimizer import LRScheduler, build_optimizer
from minitron.parallel import state
from minitron.training.initialize import initialize_megatron
from minitron.training.logger import GoldenValuesLogger, format_iteration_line
from minitron.training.model_builder import build_model, count_parameters
from minitron.training.train_step import evaluate, is_logging_rank, parallel_summary, train_step


def log(message):
    if is_logging_rank():
        print(message, flush=True)


def build_scheduler(args):
    return LRScheduler(args.lr, args.min_lr, args.lr_warmup_iters, args.lr_decay_iters,
                       args.lr_decay_style)


def run_evaluation(valid_sampler, model_chunks, args, iteration, logger):
    groups = [valid_sampler.micro_batches(i * args.global_batch_size, args.num_micro_batches)
              for i in range(args.eval_iters)]
    loss = evaluate(groups, model_chunks, args)
    logger.record("lm loss validation", iteration, loss)
    log(f" validation loss at iteration {iteration} | lm loss value: {loss:.6E} |")


def pretrain(args):
    """Train according to ``args``; returns the GoldenValuesLogger."""
    initialize_megatron(args)
    model_chunks = build_model(args)
    log(f"> building GPT model ({parallel_summary()}), "
        f"parameters on rank 0: {count_parameters(model_chunks)}")
    optimizer = build_optimizer(args, model_chunks)
    scheduler = build_scheduler(args)
    iteration = 0
    if args.load:
        iteration = load_checkpoint(args, model_chunks, optimizer, scheduler)
        log(f"> resumed from {args.load} at iteration {iteration}")

    train_ds, valid_ds = build_datasets(args)
    dp_size, dp_rank = state.get_data_parallel_world_size(), state.get_data_parallel_rank()
    train_sampler = MicroBatchSampler(train_ds, args.micro_batch_size, dp_size, dp_rank)
    valid_sampler = MicroBatchSampler(valid_ds, args.micro_batch_size, dp_size, dp_rank)
    logger = GoldenValuesLogger()

    last_saved = iteration
    while iteration < args.train_iters:
        start = time.time()
        batches = train_sampler.micro_batches(iteration * args.global_batch_size,
                                              args.num_micro_batches)
        loss, applied, grad_norm, lr = train_step(batches, model_chunks, optimizer,
                                                  scheduler, args)
        iteration += 1
        logger.record("lm loss", iteration, loss)
        if iteration % args.log_interval == 0:
            scale = optimizer.loss_scale() if args.fp16 else None
            log(format_iteration_line(iteration, args.train_iters, loss, lr, grad_norm,
                                      (time.time() - start) * 1000.0, scale))
        if args.eval_interval and iteration % args.eval_interval == 0:
            run_evaluation(valid_sampler, model_chunks, args, iteration, logger)
        if args.save and args.save_interval and iteration % args.save_interval == 0:
            save_checkpoint(args, iteration, model_chunks, optimizer, scheduler)
            last_saved = iteration
            log(f"> saved checkpoint at iteration {iteration} to {args.save}")
        if args.exit_interval and iteration % args.exit_interval == 0:
            log(f"> exiting at iteration {iteration} (--exit-interval)")
            break

    if args.save and last_saved != iteration:
        save_checkpoint(args, iteration, model_chunks, optimizer, scheduler)
    if args.log_file and is_logging_rank():
        logger.write(args.log_file)
    if dist.is_initialized():
        dist.barrier()
    return logger
