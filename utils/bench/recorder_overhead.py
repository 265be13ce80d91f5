#!/usr/bin/python3
"""Cost of the exact function recorder alone on a pure-Python, call-heavy microbenchmark.

Runs the workload (recursive calls, method calls, a generator, subscripts
through a Python __getitem__: nearly every instruction a call) in chunks
inside one interpreter, alternately without and with the recorder of
fastci.trace.recorder installed (sys.monitoring on CPython 3.12+, the
_recorder extension's frame-evaluation hook on 3.9-3.11), in ABBA order so
drift cancels; each chunk is one "test": the recorder is reset before it, as
the sampler does at every test boundary. Prints the median of the per-pair
ratios with its spread (min, quartiles, max), the load average, and the
mechanism. Chunks are timed in the thread's CPU time (the recorder runs
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

from fastci.trace.recorder import FunctionRecorder  # noqa: E402

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


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=20)
    parser.add_argument("--chunk", type=float, default=0.2, help="seconds per chunk")
    args = parser.parse_args()
    recorder = FunctionRecorder(lambda code: code.co_filename == HERE,
                                [os.path.dirname(HERE) + os.sep])
    amount = 1
    while timed(amount) < args.chunk:
        amount *= 2
    load_before = os.getloadavg()
    if not recorder.start():
        raise SystemExit("no recorder available on %s" % sys.version.split()[0])
    mechanism = recorder.mechanism
    recorder.close()
    ratios = []
    for i in range(args.pairs):
        times = {}
        for kind in (("off", "on", "on", "off") if i % 2 == 0 else ("on", "off", "off", "on")):
            if kind == "on":
                recorder = FunctionRecorder(lambda code: code.co_filename == HERE,
                                            [os.path.dirname(HERE) + os.sep])
                recorder.start()
                recorder.reset()
            elapsed = timed(amount)
            if kind == "on":
                functions, _ = recorder.take()
                recorder.close()
                # (Vec.__getitem__ is not checked: on 3.11, subscript sites
                # specialized during an "off" chunk inline it past the hook,
                # which a process that installs the hook at start-up avoids.)
                names = {getattr(c, "co_qualname", c.co_name) for c in functions}
                assert {"fib", "Vec.norm", "gen", "workload"} <= names, names
            times.setdefault(kind, []).append(elapsed)
        ratios.append((sum(times["on"]) / sum(times["off"]) - 1) * 100)
    ratios.sort()
    q = statistics.quantiles(ratios, n=4, method="inclusive")
    print("CPython %s (%s), recorder %s: %d ABBA pairs of %.2f CPU-s chunks: median %+.2f%% "
          "(min %+.2f%%, IQR %+.2f..%+.2f%%, max %+.2f%%); load average before %.2f, after %.2f "
          "on %d CPUs" % (sys.version.split()[0], sys.executable, mechanism, args.pairs,
                          args.chunk, statistics.median(ratios), ratios[0], q[0], q[2],
                          ratios[-1], load_before[0], os.getloadavg()[0], os.cpu_count()))


if __name__ == "__main__":
    main()
