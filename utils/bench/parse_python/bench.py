#!/usr/bin/env python3
"""Benchmark the parse-python pass against CPython's own parser.

Measures, on the same files and the same CPU set (default: 2 cores):
  * fastci: `fastci-opt --parse-python=root=TREE,jobs=N` end to end (walk,
    tree-sitter parse, IR build, bytecode output), best of --repeat runs;
  * CPython: `ast.parse` of every file plus a walk collecting the same
    entities (classes, functions, named lambdas), in N worker processes,
    best of --repeat runs;
  * threads: the cold run on 1 thread and on N, interleaved (--pairs
    pairs, median and spread), with the pass's stage times
    (--pass-statistics us-*);
  * warm: with a cache, the rerun with nothing changed and the rerun after
    one edited file, medians and spread, with the stage times, next to the
    cold run; each writes its IR to a file, as a CI job keeps it;
  * the IR alone: reading the written bytecode, verifying it and writing
    it again (`fastci-opt out.bc --emit=bc`), the part of a warm run that
    is the size of the IR rather than the work of the pass;
  * the floor: CPU seconds of one thread for tree-sitter's parse alone and
    for the whole per-file analysis (fastci-parse-python-split, found next
    to fastci-opt), against `ast.parse` alone and `ast.parse`+walk in one
    process. No change outside tree-sitter can take the pass below the
    parse-only figure.
The tree is copied to a scratch directory first, so it can be modified.
The load average is printed: other processes on the cores skew every
figure.

Usage: bench.py --opt build/bin/fastci-opt [--tree /usr/lib/python3.11]
                [--cores 0,1] [--repeat 3] [--pairs 5]
                [--split PATH | --no-split]
"""
import argparse
import ast
import json
import os
import resource
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


def parse_only(path):
    with open(path, "rb") as f:
        source = f.read()
    try:
        ast.parse(source, path)
    except (SyntaxError, ValueError):
        pass
    return 0


def cpython_cpu(paths, function):
    """CPU seconds of this process for `function` over every path."""
    start = time.process_time()
    for path in paths:
        function(path)
    return time.process_time() - start


def children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def cpython_run(paths, jobs):
    """Wall seconds, CPU seconds of the workers, entities found."""
    cpu = children_cpu()
    start = time.perf_counter()
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        total = sum(pool.map(entities_of, paths, chunksize=8))
    return time.perf_counter() - start, children_cpu() - cpu, total


def fastci_run(opt, root, jobs, cache=None, stages=None, output=os.devnull):
    """Wall seconds and CPU seconds of one fastci-opt run; with `stages`
    (a dict), adds the pass's per-stage microseconds (and the number of
    files linked again) to it."""
    option = f"root={root},jobs={jobs}" + (f",cache={cache}" if cache else "")
    command = [opt, f"--parse-python={option}", "--emit=bc", "-o",
               output, os.devnull]
    if stages is not None:
        command.append("--pass-statistics")
    cpu = children_cpu()
    start = time.perf_counter()
    result = subprocess.run(command, check=True, stderr=subprocess.PIPE,
                            text=True)
    wall, used = time.perf_counter() - start, children_cpu() - cpu
    if stages is not None:
        for line in result.stderr.splitlines():
            fields = line.split()
            if len(fields) >= 3 and (fields[2].startswith("us-") or
                                     fields[2] == "files-linked"):
                name = fields[2][3:] if fields[2].startswith("us-") \
                    else fields[2]
                stages.setdefault(name, []).append(int(fields[1]))
        stages.setdefault("total", []).append(int(wall * 1e6))
    return wall, used


def median(values):
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2


def spread(values, scale=1000, unit="ms"):
    """`median (min-max)` of seconds, in `unit`."""
    return (f"{median(values) * scale:.0f} {unit} "
            f"({min(values) * scale:.0f}-{max(values) * scale:.0f})")


def compare(label, walls, cpus, peer, peer_walls, peer_cpus, scale=1000,
            unit="ms"):
    """One run kind's wall and CPU time next to a peer's, with the ratios."""
    peer_wall, peer_cpu = median(peer_walls), median(peer_cpus)
    return (f"{label}: wall {spread(walls, scale, unit)}, CPU "
            f"{spread(cpus, scale, unit)}; {peer}: {peer_wall:.2f} s wall, "
            f"{peer_cpu:.2f} s CPU; ratio {peer_wall / median(walls):.2f}x "
            f"wall, {peer_cpu / median(cpus):.2f}x CPU")


def stage_line(stages):
    order = ["walk", "cache-read", "files", "cache-write", "link", "ir"]
    parts = [f"{name} {median(stages[name]) / 1000:.0f}"
             for name in order if name in stages]
    inside = sum(median(stages[name]) for name in order if name in stages)
    rest = median(stages["total"]) - inside
    parts.append(f"outside the pass (start, verifier, output) {rest / 1000:.0f}")
    return "median ms: " + ", ".join(parts)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--opt", required=True)
    parser.add_argument("--tree", default="/usr/lib/python3.11")
    parser.add_argument("--cores", default="0,1")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--pairs", type=int, default=5,
                        help="interleaved 1-thread/N-thread cold run pairs "
                        "(and at least as many warm reruns of each kind)")
    parser.add_argument("--split", help="fastci-parse-python-split binary "
                        "(default: next to --opt)")
    parser.add_argument("--no-split", action="store_true")
    args = parser.parse_args()
    if args.split is None:
        args.split = os.path.join(
            os.path.dirname(os.path.dirname(os.path.abspath(args.opt))),
            "bin", "fastci-parse-python-split")
    cores = {int(c) for c in args.cores.split(",")}
    os.sched_setaffinity(0, cores)  # inherited by every child process
    jobs = len(cores)

    scratch = tempfile.mkdtemp(prefix="fastci-bench-")
    load_start = os.getloadavg()
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

        # Interleaved, so that both sides see the same background load.
        ours, theirs = [], []
        for _ in range(args.repeat):
            ours.append(fastci_run(args.opt, root, jobs))
            theirs.append(cpython_run(paths, jobs))
        ours_wall, ours_cpu = min(r[0] for r in ours), min(r[1] for r in ours)
        theirs_wall = min(r[0] for r in theirs)
        theirs_cpu = min(r[1] for r in theirs)
        count = theirs[0][2]

        # Threads: the cold run on 1 and on `jobs` threads, interleaved.
        single, multi = [], []
        single_stages, multi_stages = {}, {}
        for _ in range(args.pairs):
            single.append(fastci_run(args.opt, root, 1, stages=single_stages))
            multi.append(fastci_run(args.opt, root, jobs,
                                    stages=multi_stages))

        # Warm: a cache, then reruns with nothing changed (after the
        # cache's 2 s racy window, so that stat data is trusted) and after
        # one edited file.
        cache = os.path.join(scratch, "cache")
        ir = os.path.join(scratch, "out.bc")
        fastci_run(args.opt, root, jobs, cache)
        time.sleep(2.2)
        fastci_run(args.opt, root, jobs, cache)
        time.sleep(2.2)
        changed = paths[len(paths) // 2]
        unchanged, incremental = [], []
        unchanged_stages, incremental_stages = {}, {}
        for i in range(max(args.repeat, args.pairs)):
            unchanged.append(fastci_run(args.opt, root, jobs, cache,
                                        unchanged_stages, ir))
            with open(changed, "a") as f:
                f.write(f"\n# edit {i}\n")
            incremental.append(fastci_run(args.opt, root, jobs, cache,
                                          incremental_stages, ir))
            # Let the edit age past the racy window before the next
            # unchanged run.
            time.sleep(2.2)
            fastci_run(args.opt, root, jobs, cache)

        # The IR alone: read, verify, write.
        ir_only = []
        for _ in range(args.repeat):
            cpu = children_cpu()
            start = time.perf_counter()
            subprocess.run([args.opt, ir, "--emit=bc", "-o", os.devnull],
                           check=True)
            ir_only.append((time.perf_counter() - start,
                            children_cpu() - cpu))

        mb = size / 1e6
        print(f"tree: {args.tree} ({len(files)} files, {mb:.1f} MB, "
              f"{count} entities by ast), cores {sorted(cores)}, "
              "load average %.2f %.2f %.2f at the start, " % load_start +
              "%.2f %.2f %.2f at the end" % os.getloadavg())
        print(f"best of {args.repeat}, interleaved; wall seconds (CPU "
              "seconds of all processes)")
        print(f"fastci-opt parse-python: {ours_wall:.3f} s ({ours_cpu:.3f})  "
              f"{len(files) / ours_wall:.0f} files/s  "
              f"{mb / ours_wall:.1f} MB/s")
        print(f"CPython ast.parse+walk:  {theirs_wall:.3f} s "
              f"({theirs_cpu:.3f})  {len(files) / theirs_wall:.0f} files/s  "
              f"{mb / theirs_wall:.1f} MB/s")
        print(f"speedup: {theirs_wall / ours_wall:.2f}x wall, "
              f"{theirs_cpu / ours_cpu:.2f}x CPU")
        walls1, cpus1 = [r[0] for r in single], [r[1] for r in single]
        wallsN, cpusN = [r[0] for r in multi], [r[1] for r in multi]
        print(f"cold, {args.pairs} interleaved pairs, median (min-max); "
              f"1 thread: wall {spread(walls1, 1, 's')}, CPU "
              f"{spread(cpus1, 1, 's')}")
        print(compare(f"cold, {jobs} threads", wallsN, cpusN, "1 thread",
                      walls1, cpus1, 1, "s") +
              "; per-file stage "
              f"{median(single_stages['files']) / median(multi_stages['files']):.2f}x")
        print(f"  1 thread  {stage_line(single_stages)}")
        print(f"  {jobs} threads {stage_line(multi_stages)}")
        for label, runs, stages in (
                ("nothing changed", unchanged, unchanged_stages),
                ("one file edited", incremental, incremental_stages)):
            print(compare(f"warm rerun, {label}", [r[0] for r in runs],
                          [r[1] for r in runs], f"the cold run ({jobs} threads)",
                          wallsN, cpusN))
            linked = stages.get("files-linked")
            print(f"  {stage_line(stages)}" +
                  (f"; test files linked again: {median(linked):.0f}"
                   if linked else ""))
        print("the IR alone (read, verify, write the "
              f"{os.path.getsize(ir) / 1e6:.1f} MB of bytecode): wall "
              f"{spread([r[0] for r in ir_only])}, CPU "
              f"{spread([r[1] for r in ir_only])}")

        if args.no_split or not os.path.exists(args.split):
            return 0
        print("floor, CPU seconds of one thread (best of "
              f"{args.repeat}):")
        split = subprocess.run(
            [args.split, f"--root={root}", f"--repeat={args.repeat}"],
            check=True, stdout=subprocess.PIPE, text=True).stdout
        for line in split.splitlines()[1:]:
            print("  " + line)
        ast_parse = min(cpython_cpu(paths, parse_only)
                        for _ in range(args.repeat))
        ast_walk = min(cpython_cpu(paths, entities_of)
                       for _ in range(args.repeat))
        print(f"  {'CPython ast.parse':<34} {ast_parse:7.3f} s  "
              f"{mb / ast_parse:6.1f} MB/s")
        print(f"  {'CPython ast.parse+walk':<34} {ast_walk:7.3f} s  "
              f"{mb / ast_walk:6.1f} MB/s")
        parse = float(next(line for line in split.splitlines()
                           if "per-file arena" in line).split()[-4])
        print(f"  tree-sitter parse alone is {parse / ast_walk:.2f}x "
              "CPython's parse+walk: the best possible speedup with this "
              f"runtime is {ast_walk / parse:.2f}x")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
