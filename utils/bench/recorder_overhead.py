#!/usr/bin/python3
"""Cost of the exact function recorder alone on a pure-Python, call-heavy microbenchmark.

Runs the workload (recursive calls, method calls, a generator, subscripts
through a Python __getitem__: nearly every instruction a call) in chunks
inside one interpreter, alternately without and with the recorder of
fastci.trace.recorder installed (sys.monitoring on CPython 3.12+, armed code
objects on 3.11, the _recorder extension's frame-evaluation hook on 3.9-3.10),
in ABBA order so drift cancels; on 3.11 the frame-evaluation hook runs as
the peer in the same sequence (ABCCBA). Each chunk is one "test": the
recorder is started and reset before it, as the sampler does at every test
boundary. Prints per mechanism the median of the per-round ratios with its
spread (min, quartiles, max), the load average, and on 3.11 the hook's time
over armed code's. Chunks are timed in the thread's CPU time (the recorder runs
in the thread it records; wall time on a shared machine swings too much).
Run it with each interpreter to compare:

    /usr/bin/python3 utils/bench/recorder_overhead.py [--pairs N] [--chunk S]
    /root/.pyenv/versions/3.12.1/bin/python3 utils/bench/recorder_overhead.py
"""

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "python"))

from fastci.trace.recorder import ENV_MECHANISM, FunctionRecorder  # noqa: E402

HERE = os.path.abspath(__file__)


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


class Vec:
    def __init__(self, n):
        self.items = list(range(n))

    def __getitem__(self, i):
        return self.items[i]

    def norm(self):
        return sum(self[i] * self[i] for i in range(len(self.items)))


def gen(n):
    for i in range(n):
        yield i


def workload(amount):
    total = 0
    for _ in range(amount):
        total += fib(15)
        total += Vec(50).norm()
        total += sum(gen(50))
    return total


def timed(amount):
    # The thread's CPU time, not wall time: the recorder runs in the thread
    # it records, and on a shared machine wall time swings by tens of
    # percent from chunk to chunk while CPU time does not.
    start = time.thread_time()
    workload(amount)
    return time.thread_time() - start


def make_recorder(mechanism):
    """A started recorder; on CPython 3.11 `mechanism` picks armed code or the hook."""
    if mechanism == "eval-frame":
        os.environ[ENV_MECHANISM] = "eval-frame"
    else:
        os.environ.pop(ENV_MECHANISM, None)
    recorder = FunctionRecorder(lambda code: code.co_filename == HERE,
                                [os.path.dirname(HERE) + os.sep])
    if not recorder.start():
        raise SystemExit("no recorder available on %s" % sys.version.split()[0])
    return recorder


def timed_with(kind, amount):
    """One chunk: without a recorder ("off") or with the recorder `kind`."""
    if kind == "off":
        return timed(amount)
    recorder = make_recorder(kind)
    recorder.reset()
    elapsed = timed(amount)
    functions, _ = recorder.take()
    # Armed code would stay in the functions (calling a hit() that does
    # nothing): the "off" chunks must run the original code.
    recorder.close(restore=True)
    names = {getattr(c, "co_qualname", c.co_name) for c in functions}
    expected = {"fib", "Vec.norm", "gen", "workload"}
    if kind != "eval-frame":
        # (The hook misses Vec.__getitem__ when subscript sites specialized
        # during an "off" chunk inline it past the hook, which a process that
        # installs the hook at start-up avoids; armed code never misses it.)
        expected.add("Vec.__getitem__")
    assert expected <= names, names
    return elapsed


def spread(ratios):
    ratios = sorted(ratios)
    q = statistics.quantiles(ratios, n=4, method="inclusive")
    return "median %+.2f%% (min %+.2f%%, IQR %+.2f..%+.2f%%, max %+.2f%%)" % (
        statistics.median(ratios), ratios[0], q[0], q[2], ratios[-1])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=20)
    parser.add_argument("--chunk", type=float, default=0.2, help="seconds per chunk")
    args = parser.parse_args()
    amount = 1
    while timed(amount) < args.chunk:
        amount *= 2
    load_before = os.getloadavg()
    recorder = make_recorder("default")
    mechanism = recorder.mechanism
    recorder.close(restore=True)
    # On CPython 3.11 the frame-evaluation hook (the mechanism before armed
    # code) runs as the peer in the same interleaved sequence.
    kinds = [mechanism] + (["eval-frame"] if mechanism == "armed-code" else [])
    order = ["off"] + kinds
    ratios = {kind: [] for kind in kinds}
    for i in range(args.pairs):
        sequence = order + order[::-1]  # ABCCBA: drift cancels
        if i % 2:
            sequence = sequence[::-1]
        times = {}
        for kind in sequence:
            times.setdefault(kind, []).append(
                timed_with("default" if kind == mechanism else kind, amount))
        for kind in kinds:
            ratios[kind].append((sum(times[kind]) / sum(times["off"]) - 1) * 100)
    print("CPython %s (%s): %d interleaved rounds of %.2f CPU-s chunks, thread CPU time; "
          "load average before %.2f, after %.2f on %d CPUs"
          % (sys.version.split()[0], sys.executable, args.pairs, args.chunk, load_before[0],
             os.getloadavg()[0], os.cpu_count()))
    for kind in kinds:
        print("  recorder %-12s %s" % (kind + ":", spread(ratios[kind])))
    if len(kinds) == 2:
        old_new = sorted((100 + o) / (100 + n) for n, o in zip(ratios[kinds[0]],
                                                                 ratios[kinds[1]]))
        print("  eval-frame / armed-code time: median %.3fx (min %.3fx, max %.3fx)"
              % (statistics.median(old_new), old_new[0], old_new[-1]))


if __name__ == "__main__":
    main()
