#!/usr/bin/python3
"""Wall-time overhead of the fastci_trace sampler, and the thread-vs-signal timer comparison.

Default mode: runs a CPU PyTorch training loop and a pure-Python workload in
fresh child interpreters, each without and with sampling (through the real
`run` wrapper path: sitecustomize hook + environment), interleaved and with
the order alternated per round so drift cancels. The child times only its
workload; we print medians and the median of per-round traced/base ratios.

`--compare-backends` measures, in this process, a signal timer (setitimer +
SIGPROF handler) against the timer thread the package uses: overhead on the
pure-Python workload, and how many of the expected samples each gets while
the main thread is in a GIL-holding C call, a GIL-releasing C call, or
blocked while a worker thread runs Python. docs/Evidence.md records results.

Usage: /usr/bin/python3 utils/bench/sampler_overhead.py [--runs N] [--rate HZ]
       [--seconds S] [--compare-backends]
"""

import argparse
import hashlib
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

UTILS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, UTILS)

from fastci_trace import config as trace_config  # noqa: E402
from fastci_trace.sampler import capture  # noqa: E402

# Each workload does a fixed amount of work (not a fixed time), calibrated
# to --seconds on this machine once, so base and traced do identical work.
# They return their own elapsed time: interpreter start-up is excluded.

def torch_train(steps):
    """A small MLP trained with SGD on CPU for `steps` steps."""
    import torch
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(),
                                torch.nn.Linear(512, 512), torch.nn.ReLU(),
                                torch.nn.Linear(512, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(64, 256), torch.randint(0, 10, (64,))
    start = time.perf_counter()
    for _ in range(steps):
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    return time.perf_counter() - start


def _fib(n):
    return n if n < 2 else _fib(n - 1) + _fib(n - 2)


def _churn(n):
    d = {}
    for i in range(n):
        d[str(i % 997)] = d.get(str(i % 997), 0) + i
    return sorted(d.items())


def pure_python(rounds):
    """Call-heavy recursion plus dict/str churn: the interpreter-bound case."""
    start = time.perf_counter()
    for _ in range(rounds):
        _fib(20)
        _churn(20000)
    return time.perf_counter() - start


WORKLOADS = {"torch-train": torch_train, "pure-python": pure_python}


def _run_child(name, amount, env):
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", name, str(amount)],
                         env=env, check=True, stdout=subprocess.PIPE, universal_newlines=True)
    return float(out.stdout.split()[-1])


def _calibrate(name, seconds, env):
    """Units of work that take about `seconds` here (probe with a small amount)."""
    probe = 5
    elapsed = _run_child(name, probe, env)
    while elapsed < 0.3:
        probe *= 4
        elapsed = _run_child(name, probe, env)
    return max(1, int(probe * seconds / elapsed))


def measure_overhead(runs, rate, seconds):
    """Print base/traced medians and median overhead per workload; return {name: ratio}."""
    base_env = {k: v for k, v in os.environ.items() if not k.startswith("FASTCI_TRACE_")}
    results = {}
    with tempfile.TemporaryDirectory() as out:
        traced_env = dict(base_env)
        cfg = trace_config.from_env(dict(base_env, FASTCI_TRACE_OUT=out,
                                         FASTCI_TRACE_RATE=str(rate)), os.getcwd())
        trace_config.export(cfg, traced_env)
        traced_env[trace_config.ENV_TEST_ID] = "bench"
        for name in WORKLOADS:
            amount = _calibrate(name, seconds, base_env)
            base, traced, ratios = [], [], []
            for i in range(runs):
                order = [(base, base_env), (traced, traced_env)]
                for times, env in (order if i % 2 == 0 else order[::-1]):
                    times.append(_run_child(name, amount, env))
                ratios.append(traced[-1] / base[-1])
            overhead = (statistics.median(ratios) - 1) * 100
            results[name] = overhead
            print("%s: base %.3fs traced %.3fs overhead %+.2f%% (median of %d interleaved runs, "
                  "%g Hz)" % (name, statistics.median(base), statistics.median(traced),
                              overhead, runs, rate), flush=True)
    return results


# -- thread vs signal -------------------------------------------------------

class ThreadTimer:
    """The package's design: a thread calling capture() at `rate` Hz."""

    def __init__(self, rate):
        self.rate, self.counts, self._stop = rate, {}, threading.Event()

    def __enter__(self):
        def loop():
            me = threading.get_ident()
            while not self._stop.wait(1.0 / self.rate):
                capture(self.counts, me)
        self._thread = threading.Thread(target=loop, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


class SignalTimer:
    """The alternative: setitimer(ITIMER_PROF) + SIGPROF handler calling capture()."""

    def __init__(self, rate):
        self.rate, self.counts = rate, {}

    def __enter__(self):
        self._old = signal.signal(signal.SIGPROF, lambda s, f: capture(self.counts, None))
        signal.setitimer(signal.ITIMER_PROF, 1.0 / self.rate, 1.0 / self.rate)
        return self

    def __exit__(self, *exc):
        signal.setitimer(signal.ITIMER_PROF, 0, 0)
        signal.signal(signal.SIGPROF, self._old)


def _samples_in(counts, code):
    return sum(n for stack, n in counts.items() if any(c is code for c, _ in stack))


def _gil_holding_call():
    data = [random.random() for _ in range(3_000_000)]
    sorted(data)  # C code that never releases the GIL


def _gil_releasing_call():
    hashlib.pbkdf2_hmac("sha256", b"pw", b"salt", 1_500_000)  # releases the GIL


def _main_blocked_worker_busy():
    def work():
        end = time.perf_counter() + 1.0
        while time.perf_counter() < end:
            pass
    t = threading.Thread(target=work)
    t.start()
    t.join()


def compare_backends(runs, rate):
    """Print overhead and sample coverage for the signal timer and the timer thread."""
    rounds = max(1, int(25 * 1.0 / pure_python(25)))  # about 1 s per run
    def workload():
        return pure_python(rounds)
    times = {"none": [], "thread": [], "signal": []}
    for _ in range(runs):
        times["none"].append(workload())
        for name, timer in (("thread", ThreadTimer), ("signal", SignalTimer)):
            with timer(rate):
                times[name].append(workload())
    base = statistics.median(times["none"])
    for name in ("thread", "signal"):
        print("overhead %-6s: %+.2f%% (median %.3fs vs %.3fs, %d runs, %g Hz)" % (
            name, (statistics.median(times[name]) / base - 1) * 100,
            statistics.median(times[name]), base, runs, rate))
    scenarios = [("GIL-holding C call in main thread", _gil_holding_call),
                 ("GIL-releasing C call in main thread", _gil_releasing_call),
                 ("main blocked in join, worker thread busy", _main_blocked_worker_busy)]
    for label, fn in scenarios:
        row = []
        for name, timer in (("thread", ThreadTimer), ("signal", SignalTimer)):
            start = time.perf_counter()
            with timer(rate) as t:
                fn()
            expected = (time.perf_counter() - start) * rate
            seen = _samples_in(t.counts, fn.__code__)
            if fn is _main_blocked_worker_busy:  # count the worker's samples instead
                seen = sum(n for stack, n in t.counts.items()
                           if any(c.co_name == "work" for c, _ in stack))
            row.append("%s %d/%d" % (name, seen, round(expected)))
        print("%-42s %s" % (label + ":", "   ".join(row)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="interleaved runs per mode (>= 5)")
    parser.add_argument("--rate", type=float, default=trace_config.DEFAULT_RATE)
    parser.add_argument("--seconds", type=float, default=2.5, help="workload duration target")
    parser.add_argument("--compare-backends", action="store_true")
    parser.add_argument("--child", nargs=2, metavar=("WORKLOAD", "AMOUNT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(WORKLOADS[args.child[0]](int(args.child[1])))
        return
    if args.runs < 1:
        parser.error("--runs must be >= 1")
    if args.compare_backends:
        compare_backends(args.runs, args.rate)
    else:
        measure_overhead(args.runs, args.rate, args.seconds)


if __name__ == "__main__":
    main()
