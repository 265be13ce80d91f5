"""A torchrun-like launcher: ``python -m minitron.launch --nproc N -- <flags>``.

Spawns N copies of ``python -m minitron.train`` with RANK, LOCAL_RANK,
WORLD_SIZE, MASTER_ADDR=127.0.0.1 and a free MASTER_PORT, streams rank 0's
output, and fails fast: if any rank exits non-zero the others are terminated
(a hung collective would otherwise wait forever).
"""

import argparse
import os
import subprocess
import sys
import time

from minitron.training.initialize import find_free_port


def parse_launcher_args(argv):
    parser = argparse.ArgumentParser(description="minitron launcher")
    parser.add_argument("--nproc", "--nproc-per-node", dest="nproc", type=int, default=1)
    parser.add_argument("--module", default="minitron.train")
    parser.add_argument("--master-port", type=int, default=None)
    parser.add_argument("--quiet-ranks", action="store_true", default=True,
                        help="Hide stdout of ranks other than 0.")
    if "--" in argv:
        split = argv.index("--")
        own, rest = argv[:split], argv[split + 1:]
    else:
        own, rest = argv, []
    return parser.parse_args(own), rest


def rank_env(rank, world, port):
    env = dict(os.environ)
    env.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(world),
               LOCAL_WORLD_SIZE=str(world), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


def launch(nproc, module, train_args, port=None, quiet_ranks=True):
    """Run ``module`` on ``nproc`` ranks; returns the first non-zero exit code or 0."""
    port = port or find_free_port()
    procs = []
    for rank in range(nproc):
        stdout = subprocess.DEVNULL if (quiet_ranks and rank > 0) else None
        procs.append(subprocess.Popen([sys.executable, "-m", module] + list(train_args),
                                      env=rank_env(rank, nproc, port), stdout=stdout))
    exit_code = 0
    while procs:
        for proc in list(procs):
            code = proc.poll()
            if code is None:
                continue
            procs.remove(proc)
            if code != 0 and exit_code == 0:
                exit_code = code
                for other in procs:
                    other.terminate()
        time.sleep(0.05)
    return exit_code


def main(argv=None):
    opts, train_args = parse_launcher_args(sys.argv[1:] if argv is None else argv)
    return launch(opts.nproc, opts.module, train_args, opts.master_port, opts.quiet_ranks)


if __name__ == "__main__":
    sys.exit(main())
