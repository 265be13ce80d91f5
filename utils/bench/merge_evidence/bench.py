#!/usr/bin/env python3
"""Benchmark of the merge-evidence pass: stack lines per second and peak RSS.

Generates a synthetic repository module (.fir) and a directory of evidence
files shaped like the sampler's (a pytest prefix of library frames, a test
function, a chain of repository calls, sometimes a library call with library
internals below it; one file per test and rank, lines sorted), then times

    fastci-opt module.fir --pass-pipeline='merge-evidence{dir=...}' --timing

as reported by `--timing` for the pass alone (wall and CPU seconds; on a
shared machine the CPU figure is the steadier one), and the process's peak
RSS. The module is written in binary form (`--emit=bc`) to /dev/null: the
textual printer builds its whole output in memory first (80 MiB for the
default sizes), which would hide the pass's own memory. It also reruns with the
evidence directory holding every file N times over (N nights of the same stacks): lines grow N
times, memory must not, since it is proportional to distinct stacks. The
named peer is the sampler's own Python reader (fastci.trace.evidence), which
only parses; the ratio is lines/s of the pass over lines/s of the peer.

`--compact` writes evidence format 2 instead, as the sampler 2.0 does: the
runner's frames are already reduced away, and each file starts with one
`@f` line per distinct repository function of its stacks, `@m` lines for
their modules and a few `@r` reads; lines/s then counts entity and stack
lines alike.

Usage: bench.py --fastci-opt build/bin/fastci-opt [--tests 200] [--ranks 4]
       [--lines 1000] [--runner-frames 7] [--threads 2] [--nights 3] [--compact]
"""

import argparse
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "python"))
from fastci.trace import evidence  # noqa: E402

SITE = "/opt/venv/lib/python3.11/site-packages"
PYTEST_PREFIX = [
    "%s/_pytest/main.py:main:320" % SITE,
    "%s/_pytest/main.py:_main:330" % SITE,
    "%s/pluggy/_hooks.py:HookCaller.__call__:493" % SITE,
    "%s/pluggy/_manager.py:PluginManager._hookexec:115" % SITE,
    "%s/_pytest/runner.py:runtestprotocol:133" % SITE,
    "%s/_pytest/runner.py:call_and_report:222" % SITE,
    "%s/_pytest/python.py:pytest_pyfunc_call:195" % SITE,
]
LIBRARY_CALLS = [
    ("%s/torch/distributed/distributed_c10d.py" % SITE, "all_reduce"),
    ("%s/torch/nn/functional.py" % SITE, "linear"),
    ("%s/torch/_tensor.py" % SITE, "Tensor.backward"),
    ("/usr/lib/python3.11/json/decoder.py", "JSONDecoder.decode"),
]


def make_module(path, files, functions):
    """Write a module of `files` files with `functions` functions each."""
    out = ['module attributes {revision = "bench", root = "/work/repo"}']
    for f in range(files):
        name = "pkg/m%d.py" % f
        mod = "pkg.m%d" % f
        out.append('file @"%s"' % name)
        out.append('module @"%s" parent @"%s" at 1:0-%d:0 hash "%016x"'
                   % (mod, name, functions * 10 + 1, f + 1))
        for g in range(functions):
            out.append('function @"%s.f%d" parent @"%s" at %d:0-%d:0 hash "%016x"'
                       % (mod, g, mod, g * 10 + 1, g * 10 + 9, f * 1000 + g + 7))
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def runner_prefix(frames):
    """The test runner's frames above the test function, `frames` of them.

    pytest's own call chain is about 30 frames deep under the sampler (pluggy
    hook calls nest), which makes real lines two to three times longer than
    the default 7 frames here.
    """
    prefix = PYTEST_PREFIX[:frames]
    while len(prefix) < frames:
        prefix.append("%s/pluggy/_callers.py:_multicall:%d" % (SITE, 100 + len(prefix)))
    return prefix


def make_stacks(rng, files, functions, lines, prefix):
    """Return {encoded stack: count} with `lines` distinct stacks.

    Stacks are the root-to-node paths of a random call tree below one test
    function, as a sampler sees them: every prefix of a stack is a stack the
    test also spent time in, and deep chains share long prefixes. New calls
    are mostly made from recently added nodes, which makes chains deep (a
    few tens of frames, as in training frameworks).
    """
    test = "tests/test_%d.py:test_case:%d" % (rng.randrange(files), rng.randrange(5, 50))
    nodes = [prefix + [test]]
    stacks = {}
    while len(stacks) < lines:
        recent = nodes[-20:] if rng.random() < 0.7 else nodes
        parent = rng.choice(recent)
        if len(parent) >= len(prefix) + 41:
            continue
        f, g = rng.randrange(files), rng.randrange(functions)
        child = parent + ["pkg/m%d.py:f%d:%d" % (f, g, g * 10 + rng.randrange(2, 9))]
        nodes.append(child)
        stack = ";".join(child)
        if rng.random() < 0.3:
            path, name = rng.choice(LIBRARY_CALLS)
            stack += ";%s:%s:%d;%s/torch/_ops.py:OpOverload.__call__:%d" % (
                path, name, rng.randrange(1, 3000), SITE, rng.randrange(1, 700))
        stacks[stack] = rng.randrange(1, 50)
    return stacks


def compact_entities(stacks, prefix_length):
    """Format-2 entity lines of `stacks`: (functions, imports, reads), encoded."""
    functions, modules = set(), set()
    for stack in stacks:
        for frame in stack.split(";")[prefix_length:]:
            path, qualname, _ = frame.rsplit(":", 2)
            if path.startswith("pkg/") or path.startswith("tests/"):
                functions.add("%s:%s:%d" % (path, qualname, int(qualname[1:] or 0) * 10 + 2
                                            if qualname.startswith("f") else 6))
                modules.add(path)
    return functions, modules, ["configs/train.yaml", "data/golden.json"]


def make_evidence(directory, rng, tests, ranks, files, functions, lines, runner_frames,
                  compact=False):
    total = 0
    prefix = runner_prefix(0 if compact else runner_frames)
    for t in range(tests):
        test_id = "tests/test_%d.py::test_case" % t
        base = make_stacks(rng, files, functions, lines, prefix)
        entities = compact_entities(base, len(prefix)) if compact else ((), (), ())
        for rank in range(ranks):
            header = {"test-id": test_id, "pid": 1000 + rank, "rank": rank,
                      "local-rank": rank, "rate": 50, "wall-seconds": 10.0,
                      "cpu-seconds": 9.0, "python": "3.11.2", "sampler": "1.0",
                      "revision": "bench", "root": "/work/repo",
                      "samples": sum(base.values()), "complete": "true"}
            if compact:
                header.update({"sampler": "2.0", "scope": "test", "coverage": "exact",
                               "time": 1000.0 + t, "executable": "/usr/bin/python3"})
            sub = os.path.join(directory, "t%d" % t)
            os.makedirs(sub, exist_ok=True)
            text = (evidence.render(header, base, entities[0], (), entities[1], entities[2])
                    if compact else evidence.render(header, base, ()))
            if not compact:  # format 1, as sampler 1.x wrote it
                text = text.replace("# fastci-evidence: 2\n", "# fastci-evidence: 1\n", 1)
            with open(os.path.join(sub, "%d-%d.stacks" % (1000 + rank, t)), "w") as f:
                f.write(text)
            total += len(base) + sum(len(e) for e in entities)
    return total


def measure(cmd):
    """Peak RSS (MiB) of `cmd` and the (wall, CPU) seconds --timing reports
    for merge-evidence alone, measured in a fresh child process."""
    # RUSAGE_CHILDREN's maxrss is the maximum over all children so far, so
    # each measurement runs in its own helper process.
    helper = ("import resource,subprocess,sys;"
              "r=subprocess.run(sys.argv[1:],stdout=subprocess.DEVNULL,"
              "stderr=subprocess.PIPE,text=True);"
              "sys.stdout.write(r.stderr);"
              "print('rc',r.returncode,resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    out = subprocess.run([sys.executable, "-c", helper] + cmd + ["--timing"],
                         capture_output=True, text=True, check=True).stdout
    wall = cpu = 0.0
    for line in out.splitlines():
        fields = line.split()
        if fields[:1] == ["rc"]:
            if fields[1] != "0":
                sys.exit("command failed: %s\n%s" % (" ".join(cmd), out))
            rss = int(fields[2]) / 1024.0
        elif fields and fields[-1] == "merge-evidence":
            # `  0.8854 ( 99.8%)    0.5183 (100.0%)  merge-evidence`
            wall, cpu = map(float, re.findall(r"([0-9.]+) \(", line)[:2])
    return wall, cpu, rss


def best_of(n, cmd):
    """The fastest of \p n runs (wall, CPU) and the largest peak RSS."""
    runs = [measure(cmd) for _ in range(n)]
    fastest = min(runs, key=lambda r: r[0])
    return fastest[0], fastest[1], max(r[2] for r in runs)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--fastci-opt", required=True)
    parser.add_argument("--tests", type=int, default=200)
    parser.add_argument("--ranks", type=int, default=4)
    parser.add_argument("--lines", type=int, default=1000, help="distinct stacks per file")
    parser.add_argument("--files", type=int, default=100, help="repository source files")
    parser.add_argument("--functions", type=int, default=50, help="functions per file")
    parser.add_argument("--runner-frames", type=int, default=7,
                        help="test-runner frames above each test function (real pytest: ~30)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--nights", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--keep", help="generate into this directory and keep it")
    parser.add_argument("--compact", action="store_true", help="evidence format 2")
    args = parser.parse_args()

    load_before = os.getloadavg()[0]
    work = args.keep or tempfile.mkdtemp(prefix="merge-evidence-bench-")
    os.makedirs(work, exist_ok=True)
    module = os.path.join(work, "module.fir")
    evdir = os.path.join(work, "evidence")
    nights = os.path.join(work, "nights")
    rng = random.Random(args.seed)
    make_module(module, args.files, args.functions)
    shutil.rmtree(evdir, ignore_errors=True)
    lines = make_evidence(evdir, rng, args.tests, args.ranks, args.files,
                          args.functions, args.lines, args.runner_frames, args.compact)
    size = sum(os.path.getsize(os.path.join(d, f))
               for d, _, fs in os.walk(evdir) for f in fs)
    shutil.rmtree(nights, ignore_errors=True)
    for n in range(args.nights):
        shutil.copytree(evdir, os.path.join(nights, "night%d" % n))

    opt = [args.fastci_opt, module, "-o", "/dev/null", "--emit=bc",
           "--threads=%d" % args.threads]
    _, _, base_rss = best_of(1, opt)
    one = best_of(args.repeat, opt + ["--pass-pipeline=merge-evidence{dir=%s}" % evdir])
    many = best_of(args.repeat, opt + ["--pass-pipeline=merge-evidence{dir=%s}" % nights])

    start = time.perf_counter()
    for d, _, fs in os.walk(evdir):
        for f in fs:
            evidence.read_evidence(os.path.join(d, f))
    peer = time.perf_counter() - start

    print("evidence (format %d): %d files, %d lines, %.1f MiB (%.0f bytes per line), %d threads, "
          "load average %.1f before, %.1f after"
          % (2 if args.compact else 1, args.tests * args.ranks, lines, size / 2**20, size / lines, args.threads,
             load_before, os.getloadavg()[0]))
    print("module only: peak RSS %.1f MiB" % base_rss)
    for label, n, (wall, cpu, rss) in (("1 night", 1, one),
                                       ("%d nights" % args.nights, args.nights, many)):
        print("merge-evidence, %s: %.3f s wall, %.3f s CPU, peak RSS %.1f MiB, "
              "%.2fM lines/s wall, %.2fM lines per CPU-second"
              % (label, wall, cpu, rss, lines * n / wall / 1e6, lines * n / cpu / 1e6))
    print("peak RSS above the module alone: %.1f MiB for 1 night, %.1f MiB "
          "for %d nights (%d times the lines, the same distinct stacks)"
          % (one[2] - base_rss, many[2] - base_rss, args.nights, args.nights))
    peer_rate = lines / peer
    print("peer (fastci.trace.evidence.read_evidence, parse only, 1 thread): "
          "%.3f s, %.2fM lines/s" % (peer, peer_rate / 1e6))
    print("ratio merge-evidence (wall) / peer: %.1fx" % (lines / one[0] / peer_rate))
    if not args.keep:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
