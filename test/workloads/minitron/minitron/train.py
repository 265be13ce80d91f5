"""Entry point: ``python -m minitron.train <megatron flags>``.

Run directly for a single process, or under ``python -m minitron.launch``
for multi-rank training; the rank/world come from the environment.
"""

import sys

import torch.distributed as dist

from minitron.config import parse_args
from minitron.training.loop import pretrain


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        pretrain(args)
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
