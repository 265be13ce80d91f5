#!/usr/bin/env python3
"""Benchmark the parse-python pass against CPython's own parser.

Measures, on the same files and the same CPU set (default: 2 cores):
  * fastci: `fastci-opt --parse-python=root=TREE,jobs=N` end to end (walk,
    tree-sitter parse, IR build, bytecode output), best of --repeat runs;
  * CPython: `ast.parse` of every file plus a walk collecting the same
    entities (classes, functions, named lambdas), in N worker processes,
    best of --repeat runs;
  * incremental: with a warm cache, the rerun after one file changed.
The tree is copied to a scratch directory first, so it can be modified.

Usage: bench.py --opt build/bin/fastci-opt [--tree /usr/lib/python3.11]
                [--cores 0,1] [--repeat 3]
"""
import argparse
import ast
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor


def entities_of(path):
    with open(path, "rb") as f:
        source = f.read()
    try:
        tree = ast.parse(source, path)
    except (SyntaxError, ValueError):
        return 0
    count = 0
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef,
                             ast.ClassDef)):
            count += 1
        elif (isinstance(node, ast.Assign) and len(node.targets) == 1 and
              isinstance(node.targets[0], ast.Name) and
              isinstance(node.value, ast.Lambda)):
            count += 1
    return count


def cpython_run(paths, jobs):
    start = time.perf_counter()
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        total = sum(pool.map(entities_of, paths, chunksize=8))
    return time.perf_counter() - start, total


def fastci_run(opt, root, jobs, cache=None, cores=None):
    option = f"root={root},jobs={jobs}" + (f",cache={cache}" if cache else "")
    command = [opt, f"--parse-python={option}", "--emit=bc", "-o",
               os.devnull, os.devnull]
    start = time.perf_counter()
    subprocess.run(command, check=True, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--opt", required=True)
    parser.add_argument("--tree", default="/usr/lib/python3.11")
    parser.add_argument("--cores", default="0,1")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    cores = {int(c) for c in args.cores.split(",")}
    os.sched_setaffinity(0, cores)  # inherited by every child process
    jobs = len(cores)

    scratch = tempfile.mkdtemp(prefix="fastci-bench-")
    try:
        root = os.path.join(scratch, "tree")
        shutil.copytree(args.tree, root, symlinks=True,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        listing = subprocess.run(
            [args.opt, f"--parse-python=root={root}", "--emit=json",
             os.devnull], check=True, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL).stdout
        entities = json.loads(listing)["entities"]
        files = [e["symbol"] for e in entities if e["kind"] == "file"]
        paths = [os.path.join(root, f) for f in files]
        size = sum(os.path.getsize(p) for p in paths)

        ours = min(fastci_run(args.opt, root, jobs) for _ in range(args.repeat))
        theirs, count = min(cpython_run(paths, jobs)
                            for _ in range(args.repeat))

        cache = os.path.join(scratch, "cache")
        fastci_run(args.opt, root, jobs, cache)
        changed = paths[len(paths) // 2]
        incremental = []
        for i in range(args.repeat):
            with open(changed, "a") as f:
                f.write(f"\n# edit {i}\n")
            incremental.append(fastci_run(args.opt, root, jobs, cache))
        warm = min(incremental)

        mb = size / 1e6
        print(f"tree: {args.tree} ({len(files)} files, {mb:.1f} MB, "
              f"{count} entities by ast), cores {sorted(cores)}")
        print(f"fastci-opt parse-python: {ours:.3f} s  "
              f"{len(files) / ours:.0f} files/s  {mb / ours:.1f} MB/s")
        print(f"CPython ast.parse+walk:  {theirs:.3f} s  "
              f"{len(files) / theirs:.0f} files/s  {mb / theirs:.1f} MB/s")
        print(f"speedup: {theirs / ours:.2f}x")
        print(f"incremental rerun after one changed file: {warm * 1000:.0f} ms")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
