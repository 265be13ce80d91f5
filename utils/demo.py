#!/usr/bin/env python3
"""The README's main job: FastCI evaluated end to end on the demo workload.

    utils/demo.py --build-dir BUILD [--mrs N] [--quick] [--jobs J] [--out DIR] ...

utils/run-demo.sh builds FastCI and execs this with --build-dir. It replays
test/workloads/minitron's merge-request history and compares CI strategies
(run-all, path filters, file-level static RTS, FastCI's ablations); see
docs/Evaluation.md. Prints a summary table and the report's path (default
BUILD/eval/report.md). Other options are those of `python -m eval --help`.
"""

import argparse
import os
import sys

UTILS = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, UTILS)

from eval import evaluate  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--build-dir", required=True)
    known, rest = parser.parse_known_args(argv)
    build = os.path.abspath(known.build_dir)
    forwarded = ["--fastci-opt", os.path.join(build, "bin", "fastci-opt")]
    if not any(a == "--out" or a.startswith("--out=") for a in rest):
        forwarded += ["--out", os.path.join(build, "eval")]
    return evaluate.main(forwarded + rest)


if __name__ == "__main__":
    sys.exit(main())
