#!/usr/bin/python3
"""What tracing costs one interpreter a test starts: a program run plain and
as a traced child, interleaved, with the cost split by thread and phase.

    process_overhead.py [--rounds N] [--cwd DIR] [--peer-env KEY=VALUE ...] \\
        -- PYTHON SCRIPT-OR-ARGS...

The program is what a test's subprocess runs (`accelerate launch`'s worker,
a torchrun rank). The traced kind gets the environment a traced test hands
its children (`python -m fastci.trace run`'s, taken once from PYTHON), so
the sampler starts in it; `--peer-env` adds traced kinds
with more settings in the same rounds (`FASTCI_TRACE_RATE=0.01`: without
ticks; `FASTCI_TRACE_RECORDER=off`: without the recorder). A shim
sitecustomize takes the start-up hook's place on PYTHONPATH in every kind
(so neither runs the system's sitecustomize, which the hook would chain
to): it starts the sampler itself, timing the import of fastci.trace and
the start, and at exit times the final stop and reads each thread's CPU
from /proc/self/task/*/schedstat; in between it adds up the main thread's
CPU in the audit hook's exec callback, in judging which files lie in the
repository (the first file of each directory: resolving and listing the
directory) and arming code, and in evidence writes. Whole-suite figures
scatter by ±10 % on shared 2-core machines; a process's own thread CPU
much less, and the minimum over the rounds is printed beside the median
for that reason.
Fork children of multiprocessing (a DataLoader's workers) write their own
figures (through finalizers around fastci's, since they leave by
os._exit), which add to their kind's; other fork children are not seen.
Prints, per kind: wall, CPU and page faults of the processes (median, min,
difference to plain), how many processes wrote figures, the main threads'
and the other threads' CPU, and the phases, summed over the processes. Exit status 1 when a run fails or a traced run writes no
evidence.
"""
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

# The same command line and rounds (this directory's collect_overhead.py).
from collect_overhead import interleave, parse_arguments

# What the shim times in a traced process, in ms: wall time of the import of
# fastci.trace, the start and the final stop; the main thread's CPU in the
# exec hook (of which judging files, by directory, and arming code) and in
# writes.
PHASES = ("import", "start", "stop", "exec", "judging", "arming", "write")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PACKAGE = os.path.join(ROOT, "python")

# First on PYTHONPATH in every kind. Writes one JSON line per process to
# $PROCESS_OVERHEAD_LOG: its phases in ms and the CPU ms of each thread.
_SHIM = r'''
import os, time, atexit
_log, _phases = os.environ.get("PROCESS_OVERHEAD_LOG"), {}
def _threads():
    main, other = 0.0, 0.0
    for tid in os.listdir("/proc/self/task"):
        try:
            with open("/proc/self/task/%s/schedstat" % tid) as f:
                ms = int(f.read().split()[0]) / 1e6
        except (OSError, ValueError, IndexError):
            continue
        if int(tid) == os.getpid():
            main += ms
        else:
            other += ms
    return main, other
def _dump():
    if _log:
        main, other = _threads()
        _phases.setdefault("other", other)  # read before stop() if traced: the thread may end
        import json
        with open(_log, "a") as f:
            f.write(json.dumps(dict(_phases, main=main)) + "\n")
atexit.register(_dump)  # first registered: runs last
def _forked():
    # A fork child writes a record of its own. multiprocessing's workers
    # (a DataLoader's) leave by os._exit, past atexit; Process._bootstrap
    # clears the finalizers they inherited and then runs the after-fork
    # callbacks, which register two around fastci's own (exitpriority
    # -100): one reads the threads' CPU and starts the stop's clock, the
    # other writes the record. Other fork children are not counted.
    _phases.clear()
    import sys
    util = sys.modules.get("multiprocessing.util")
    if util is not None:
        util.register_after_fork(_forked, _finalizers)
def _finalizers(_):
    import multiprocessing.util as util
    started = []
    def before():
        _phases["other"] = _threads()[1]
        started.append(time.perf_counter())
    def after():
        if os.environ.get("FASTCI_TRACE_TEST_ID"):
            _phases["stop"] = 1e3 * (time.perf_counter() - started[0])
        _dump()
    util.Finalize(None, before, exitpriority=-99)
    util.Finalize(None, after, exitpriority=-101)
os.register_at_fork(after_in_child=_forked)
if os.environ.get("FASTCI_TRACE_TEST_ID") and os.environ.get("FASTCI_TRACE_OUT"):
    t = time.perf_counter()
    from fastci.trace import process as _process
    _phases["import"] = 1e3 * (time.perf_counter() - t)
    # The main thread's CPU in the audit hook's exec callback, and in what
    # it spends most on: judging files (the first file of each directory:
    # resolving and listing the directory), arming code (and the writes).
    def _timed(owner, method, phase, untimed=lambda self, *args: False):
        inner = getattr(owner, method)
        def timed(self, *args, **kwargs):
            if untimed(self, *args):
                return inner(self, *args, **kwargs)
            t = time.thread_time()
            try:
                return inner(self, *args, **kwargs)
            finally:
                _phases[phase] = _phases.get(phase, 0.0) + 1e3 * (time.thread_time() - t)
        setattr(owner, method, timed)
    from fastci.trace import arming as _arming, frames as _frames, recorder as _recorder
    _timed(_recorder.FunctionRecorder, "_on_exec", "exec")
    _timed(_frames.FrameDescriber, "in_repository_file", "judging",
           lambda self, filename: filename.rpartition("/")[0] in self._dir_verdicts)
    _timed(_arming.Armer, "arm_in_place", "arming")
    _timed(_process.Sampler, "_write", "write")
    # Wrapped before the start: the sampler binds some of these methods.
    t = time.perf_counter()
    _process.start_from_env()
    _phases["start"] = 1e3 * (time.perf_counter() - t)
    def _stop():
        _phases["other"] = _threads()[1]
        t = time.perf_counter()
        _process.stop()
        _phases["stop"] = 1e3 * (time.perf_counter() - t)
    atexit.register(_stop)  # runs before process.py's own stop(), which then has nothing to do
'''


def traced_env(python, cwd, work):
    """The environment a traced test hands its children, with OUT as a placeholder."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([PACKAGE] + [p for p in [env.get("PYTHONPATH")] if p])
    proc = subprocess.run([python, "-m", "fastci.trace", "run", "--out", os.path.join(work, "out"),
                           "--test-id", "process_overhead", "--", "env", "-0"],
                          cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr.decode(errors="replace"))
        raise SystemExit("process_overhead: error: %s cannot run fastci.trace" % python)
    return dict(item.split("=", 1) for item in proc.stdout.decode().split("\0") if "=" in item)


def main():
    args, command = parse_arguments(__doc__, "rounds", 10)

    work = tempfile.mkdtemp(prefix="process-overhead-")
    shim = os.path.join(work, "shim")
    os.mkdir(shim)
    with open(os.path.join(shim, "sitecustomize.py"), "w") as f:
        f.write(_SHIM)
    traced = traced_env(command[0], args.cwd, work)
    hook = traced["PYTHONPATH"].split(os.pathsep)[0]
    log = os.path.join(work, "log")
    base = dict(os.environ)
    base.pop("PYTHONDONTWRITEBYTECODE", None)
    base["PYTHONPYCACHEPREFIX"] = os.path.join(work, "pycache")
    base["PROCESS_OVERHEAD_LOG"] = log
    kinds = {"plain": None, "traced": ""}
    for setting in args.peer_env:
        kinds["traced " + setting] = setting

    def env_of(kind):
        env = dict(base)
        setting = kinds[kind]
        if setting is not None:
            env.update(traced)
            for item in setting.split():
                key, value = item.split("=", 1)
                env[key] = value
        paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != hook]
        env["PYTHONPATH"] = os.pathsep.join([shim] + paths)
        return env

    def run_kind(kind):
        env = env_of(kind)
        out = os.path.join(work, "out")
        shutil.rmtree(out, ignore_errors=True)
        if os.path.exists(log):
            os.unlink(log)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        proc = subprocess.run(command, cwd=args.cwd, env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if proc.returncode != 0:
            sys.stderr.write(proc.stderr.decode(errors="replace")[-3000:])
            raise SystemExit("process_overhead: error: %s exited %d" % (command[0],
                                                                        proc.returncode))
        if kinds[kind] is not None and not any(n.endswith(".stacks") for _, _, names in
                                               os.walk(out) for n in names):
            raise SystemExit("process_overhead: error: the %s run wrote no evidence" % kind)
        try:
            with open(log) as f:
                records = [json.loads(line) for line in f]
        except OSError:
            records = []
        figures = {"wall": 1e3 * wall,
                   "cpu": 1e3 * ((after.ru_utime + after.ru_stime)
                                 - (before.ru_utime + before.ru_stime)),
                   "faults": float(after.ru_minflt - before.ru_minflt)}
        figures["processes"] = float(len(records))
        for name in ("main", "other") + PHASES:
            values = [r[name] for r in records if name in r]
            if values:
                figures[name] = sum(values)
        return figures

    print("program: %s (in %s); load average before %.2f %.2f %.2f on %d CPUs"
          % (" ".join(command), args.cwd, *os.getloadavg(), os.cpu_count()), flush=True)
    order = list(kinds)
    results = interleave(order, args.rounds, run_kind)
    units = {"faults": "", "processes": ""}

    def stat(kind, name):
        values = [r[name] for r in results[kind] if name in r]
        return (statistics.median(values), min(values)) if values else None

    for kind in order:
        parts = []
        for name in ("wall", "cpu", "faults", "processes", "main", "other") + PHASES:
            mine, plain = stat(kind, name), stat("plain", name)
            if mine is None:
                continue
            unit = units.get(name, " ms")
            text = "%s %.1f%s (min %.1f)" % (name, mine[0], unit, mine[1])
            if kind != "plain" and plain is not None:
                text += " %+.1f / min %+.1f" % (mine[0] - plain[0], mine[1] - plain[1])
            parts.append(text)
        print("  %-24s %s" % (kind + ":", "; ".join(parts)))
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
