#!/usr/bin/python3
"""Wall-time overhead of the fastci_trace sampler, and the thread-vs-signal timer comparison.

Default mode: runs a CPU PyTorch training loop and a pure-Python workload in
fresh child interpreters in three modes: `base` (no sampling), `traced`
(sampling plus the exact function recorder, the default configuration;
where no recorder can run, the call burst instead) and `sampling` (the
recorder turned off, no call burst: sampling only), through the real `run`
wrapper path
(sitecustomize hook + environment). Every round runs each mode once, the
order rotated per round so drift cancels. The child times only its workload,
in wall time and in process CPU time (all threads, the sampler's included:
less sensitive than wall time to other jobs on a shared machine); we also
time the whole child process (start-up and imports, where a burst
mostly runs). Per mode we print the median of per-round overhead ratios with
their spread, and sampling's own CPU time per tick (the sampling thread's
and that of the captures the main thread takes) times the rate
(read from the evidence files' `sampler-cpu-seconds`/`ticks` headers): a
load-independent estimate of the sampler's share, which the wall-time
ratios on a busy machine cannot resolve. The load average is printed too.

`--paired` measures the steady-state cost of sampling alone inside one
interpreter: the workload runs in short chunks, alternately without and with
a live Sampler (started before and stopped after the timed chunk, so thread
start-up and file writing are not counted), in ABBA order. Fresh interpreters
differ by several percent from each other (hash seed, memory layout), which
the paired chunks share; each pair gives one ratio, and we print their median
with a bootstrap 95% confidence interval, and the same scaled to the full
rate (a chunk's first interval holds no sample, so short chunks get fewer
ticks per second than the rate). Other jobs and the host only ever
slow a chunk down, so on a machine whose timings swing by tens of percent
(shared virtual machines) the fastest chunks of each kind are the steadier
estimate of the undisturbed times; we print the ratio of the means of the
fastest fifth as well. The call burst is a per-test start-up
cost bounded by its budget, measured by the default mode.

`--compare-backends` measures, in this process, a signal timer (setitimer +
SIGPROF handler) against the timer thread the package uses: overhead on the
pure-Python workload, and how many of the expected samples each gets while
the main thread is in a GIL-holding C call, a GIL-releasing C call, or
blocked while a worker thread runs Python. docs/Evidence.md records results.

Usage: /usr/bin/python3 utils/bench/sampler_overhead.py [--runs N] [--rate HZ]
       [--seconds S] [--calls S] [--workload W] [--compare-backends]
       [--paired PAIRS [--chunk S]]
"""

import argparse
import glob
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
PACKAGE_ROOT = os.path.join(os.path.dirname(UTILS), "python")
sys.path.insert(0, PACKAGE_ROOT)

from fastci.trace import config as trace_config  # noqa: E402
from fastci.trace.evidence import read_evidence  # noqa: E402
from fastci.trace.sampler import capture  # noqa: E402

# CPU seconds of the process (all threads, the sampler's included) during the
# last workload run: less sensitive to other jobs on the machine than wall time.
_LAST_CPU = [0.0]

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
    start, cpu = time.perf_counter(), time.process_time()
    for _ in range(steps):
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    _LAST_CPU[0] = time.process_time() - cpu
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
    start, cpu = time.perf_counter(), time.process_time()
    for _ in range(rounds):
        _fib(20)
        _churn(20000)
    _LAST_CPU[0] = time.process_time() - cpu
    return time.perf_counter() - start


WORKLOADS = {"torch-train": torch_train, "pure-python": pure_python}


def _run_child(name, amount, env):
    """Run one workload in a fresh interpreter: (workload s, workload CPU s, whole process s)."""
    start = time.perf_counter()
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", name, str(amount)],
                         env=env, check=True, stdout=subprocess.PIPE, universal_newlines=True)
    wall, cpu = out.stdout.split()[-2:]
    return float(wall), float(cpu), time.perf_counter() - start


def _calibrate(name, seconds, env):
    """Units of work that take about `seconds` here (probe with a small amount)."""
    probe = 5
    elapsed = _run_child(name, probe, env)[0]
    while elapsed < 0.3:
        probe *= 4
        elapsed = _run_child(name, probe, env)[0]
    return max(1, int(probe * seconds / elapsed))


def _sampler_cost(out):
    """(sampler-thread CPU seconds, ticks, call-burst CPU seconds, coverage) over a run's files."""
    cpu, ticks, burst, coverage = 0.0, 0, 0.0, set()
    for path in glob.glob(os.path.join(out, "**", "*.stacks"), recursive=True):
        header, _ = read_evidence(path)
        if header.get("mode") == "calls":
            burst += float(header.get("calls-cpu-seconds", 0))
        else:
            cpu += float(header.get("sampler-cpu-seconds", 0))
            ticks += int(header.get("ticks", 0))
            coverage.add("%s (%s)" % (header.get("coverage", "sampled"),
                                      header.get("recorder", "none")))
    return cpu, ticks, burst, coverage


def _quartiles(values):
    """(first quartile, third quartile) by the inclusive method (any sample size)."""
    if len(values) < 2:
        return values[0], values[0]
    q = statistics.quantiles(values, n=4, method="inclusive")
    return q[0], q[2]


MODES = ("base", "traced", "sampling")


def measure_overhead(runs, rate, seconds, calls, workloads=tuple(WORKLOADS)):
    """Print per-workload medians, spread and sampler CPU per tick; return {workload: {mode: %}}.

    Modes: `base` (no sampling), `traced` (sampling plus the call burst with
    budget `calls`, the default configuration) and `no-burst` (sampling
    only, FASTCI_TRACE_CALLS=0). Every round runs each mode once, in an
    order rotated per round so slow drift of the machine's load cancels.
    """
    base_env = {k: v for k, v in os.environ.items() if not k.startswith("FASTCI_TRACE_")}
    results = {}
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as scratch:
        envs = {"base": base_env}
        for mode, budget in (("traced", calls), ("sampling", 0)):
            env = dict(base_env)
            if mode == "sampling":
                env["FASTCI_TRACE_RECORDER"] = "off"
            cfg = trace_config.from_env(dict(env, FASTCI_TRACE_OUT=scratch,
                                             FASTCI_TRACE_RATE=str(rate),
                                             FASTCI_TRACE_CALLS=str(budget)), os.getcwd())
            trace_config.export(cfg, env)
            env[trace_config.ENV_TEST_ID] = "bench"
            envs[mode] = env
        for name in workloads:
            amount = _calibrate(name, seconds, base_env)
            work = {m: [] for m in MODES}
            cpus = {m: [] for m in MODES}
            proc = {m: [] for m in MODES}
            cost = {m: [] for m in MODES[1:]}
            for i in range(runs):
                for mode in MODES[i % 3:] + MODES[:i % 3]:
                    env = dict(envs[mode])
                    if mode != "base":
                        out = os.path.join(scratch, "%s-%s-%d" % (name, mode, i))
                        env[trace_config.ENV_OUT] = out
                    w, c, p = _run_child(name, amount, env)
                    work[mode].append(w)
                    cpus[mode].append(c)
                    proc[mode].append(p)
                    if mode != "base":
                        cost[mode].append(_sampler_cost(out))
            results[name] = {}
            base = statistics.median(work["base"])
            print("%s: %d rounds, %g Hz, base workload %.3fs (process %.3fs)" % (
                name, runs, rate, base, statistics.median(proc["base"])))
            for mode in MODES[1:]:
                ratios = [(t / b - 1) * 100 for t, b in zip(work[mode], work["base"])]
                pratios = [(t / b - 1) * 100 for t, b in zip(proc[mode], proc["base"])]
                cratios = [(t / b - 1) * 100 for t, b in zip(cpus[mode], cpus["base"])]
                c1, c3 = _quartiles(cratios)
                q1, q3 = _quartiles(ratios)
                cpu = sum(c[0] for c in cost[mode])
                ticks = sum(c[1] for c in cost[mode])
                per_tick = cpu / ticks if ticks else 0.0
                burst = statistics.median(c[2] for c in cost[mode])
                coverage = sorted(set().union(*(c[3] for c in cost[mode])))
                overhead = statistics.median(ratios)
                results[name][mode] = overhead
                print("  %-8s workload %+.2f%% (median of per-round ratios; IQR %+.2f..%+.2f%%, "
                      "min %+.2f%%, max %+.2f%%); whole process %+.2f%%" % (
                          mode, overhead, q1, q3, min(ratios), max(ratios),
                          statistics.median(pratios)))
                print("  %-8s workload CPU (all threads) %+.2f%% (IQR %+.2f..%+.2f%%)" % (
                    mode, statistics.median(cratios), c1, c3))
                print("  %-8s sampling %.1f us CPU per tick x %g Hz = %.3f%% of a core; "
                      "call burst %.3fs CPU per process; coverage %s" % (
                          mode, per_tick * 1e6, rate, per_tick * rate * 100, burst,
                          ", ".join(coverage)), flush=True)
    load_after = os.getloadavg()
    print("load average (1/5/15 min): before %.2f %.2f %.2f, after %.2f %.2f %.2f on %d CPUs" % (
        load_before + load_after + (os.cpu_count(),)))
    return results


# -- paired chunks in one interpreter ---------------------------------------

def _bootstrap_median_ci(values, rounds=2000, seed=1):
    """A 95% percentile-bootstrap confidence interval of the median of `values`."""
    rng = random.Random(seed)
    medians = sorted(statistics.median(rng.choices(values, k=len(values)))
                     for _ in range(rounds))
    return medians[int(0.025 * rounds)], medians[int(0.975 * rounds) - 1]


def measure_paired(pairs, rate, chunk_seconds, workloads=tuple(WORKLOADS)):
    """Print, per workload, the median overhead of sampling over `pairs` paired chunks."""
    from fastci.trace.sampler import Sampler
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as scratch:
        cfg = trace_config.from_env({trace_config.ENV_OUT: scratch,
                                     trace_config.ENV_RATE: str(rate),
                                     trace_config.ENV_CALLS: "0"}, os.getcwd())
        for name in workloads:
            fn = WORKLOADS[name]
            fn(1)  # imports and first-call costs out of the way
            probe = 1
            while fn(probe) < 0.1:
                probe *= 2
            amount = max(1, int(probe * chunk_seconds / fn(probe)))
            ratios, ticks, cpu = [], 0, 0.0
            base_times, traced_times = [], []

            def sampled():
                sampler = Sampler(cfg)
                sampler.start()
                sampler.begin("bench/%s" % name)
                sink = sampler._sinks[-1]
                elapsed = fn(amount)
                sampler.end()  # charges the sink what its ticks cost
                nonlocal ticks, cpu
                ticks += sink.ticks
                cpu += sink.sampler_cpu
                sampler.stop()
                return elapsed

            for i in range(pairs):
                if i % 2 == 0:
                    base, traced = fn(amount), sampled()
                else:
                    traced, base = sampled(), fn(amount)
                base_times.append(base)
                traced_times.append(traced)
                ratios.append((traced / base - 1) * 100)
            low, high = _bootstrap_median_ci(ratios)
            q1, q3 = _quartiles(ratios)
            fastest = max(1, pairs // 5)
            best_base = statistics.mean(sorted(base_times)[:fastest])
            best_traced = statistics.mean(sorted(traced_times)[:fastest])
            print("%s: %d pairs of %.2fs chunks in one interpreter, %g Hz: sampling %+.2f%% "
                  "(median; 95%% CI %+.2f..%+.2f%%, IQR %+.2f..%+.2f%%); sampling "
                  "%.1f us CPU per tick, %.2f ticks/s" % (
                      name, pairs, statistics.median(base_times), rate,
                      statistics.median(ratios), low, high, q1, q3,
                      cpu / ticks * 1e6 if ticks else 0.0,
                      ticks / sum(traced_times)),
                  flush=True)
            # A chunk starts with one interval of no sample; short chunks get
            # fewer ticks per second than the rate, so scale to the full rate.
            per_second = ticks / sum(traced_times)
            scale = rate / per_second if per_second else 1.0
            print("%s: fastest %d chunks of each: %.4fs without, %.4fs with sampling: %+.2f%%; "
                  "at the full %g ticks/s: median %+.2f%%, fastest %+.2f%%" % (
                      name, fastest, best_base, best_traced, (best_traced / best_base - 1) * 100,
                      rate, statistics.median(ratios) * scale,
                      (best_traced / best_base - 1) * 100 * scale),
                  flush=True)
    load_after = os.getloadavg()
    print("load average (1/5/15 min): before %.2f %.2f %.2f, after %.2f %.2f %.2f on %d CPUs" % (
        load_before + load_after + (os.cpu_count(),)))


# -- thread vs signal -------------------------------------------------------

class ThreadTimer:
    """The package's design: a thread calling capture() at `rate` Hz."""

    def __init__(self, rate):
        self.rate, self.counts, self._stop = rate, {}, threading.Event()
        self.codes = {}

    def __enter__(self):
        def loop():
            me = threading.get_ident()
            while not self._stop.wait(1.0 / self.rate):
                capture(self.counts, me, self.codes)
        self._thread = threading.Thread(target=loop, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


class SignalTimer:
    """The alternative: setitimer(ITIMER_PROF) + SIGPROF handler calling capture()."""

    def __init__(self, rate):
        self.rate, self.counts, self.codes = rate, {}, {}

    def __enter__(self):
        self._old = signal.signal(signal.SIGPROF,
                                  lambda s, f: capture(self.counts, None, self.codes))
        signal.setitimer(signal.ITIMER_PROF, 1.0 / self.rate, 1.0 / self.rate)
        return self

    def __exit__(self, *exc):
        signal.setitimer(signal.ITIMER_PROF, 0, 0)
        signal.signal(signal.SIGPROF, self._old)


def _codes_of(stack, codes):
    """The code objects of a capture() key (id, lasti pairs)."""
    return [codes[i] for i in stack[::2]]


def _samples_in(timer, code):
    return sum(n for stack, n in timer.counts.items() if code in _codes_of(stack, timer.codes))


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
            seen = _samples_in(t, fn.__code__)
            if fn is _main_blocked_worker_busy:  # count the worker's samples instead
                seen = sum(n for stack, n in t.counts.items()
                           if any(c.co_name == "work" for c in _codes_of(stack, t.codes)))
            row.append("%s %d/%d" % (name, seen, round(expected)))
        print("%-42s %s" % (label + ":", "   ".join(row)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=11,
                        help="interleaved rounds (each runs every mode once; default 11)")
    parser.add_argument("--rate", type=float, default=trace_config.DEFAULT_RATE)
    parser.add_argument("--seconds", type=float, default=2.5, help="workload duration target")
    parser.add_argument("--calls", type=float, default=trace_config.DEFAULT_CALLS,
                        help="call-burst budget of the `traced` mode, CPU seconds")
    parser.add_argument("--workload", action="append", choices=sorted(WORKLOADS),
                        help="measure only this workload (repeatable; default: all)")
    parser.add_argument("--compare-backends", action="store_true")
    parser.add_argument("--paired", type=int, metavar="PAIRS",
                        help="measure sampling alone over PAIRS paired chunks in one interpreter")
    parser.add_argument("--chunk", type=float, default=0.5,
                        help="seconds per chunk with --paired (default 0.5)")
    parser.add_argument("--child", nargs=2, metavar=("WORKLOAD", "AMOUNT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        wall = WORKLOADS[args.child[0]](int(args.child[1]))
        print(wall, _LAST_CPU[0])
        return
    if args.runs < 1:
        parser.error("--runs must be >= 1")
    if args.compare_backends:
        compare_backends(args.runs, args.rate)
    elif args.paired:
        measure_paired(args.paired, args.rate, args.chunk, tuple(args.workload or WORKLOADS))
    else:
        measure_overhead(args.runs, args.rate, args.seconds, args.calls,
                         tuple(args.workload or WORKLOADS))


if __name__ == "__main__":
    main()
