"""The sampling thread: periodic stack capture, per-test sinks, periodic flush.

A daemon thread wakes `rate` times a second, takes `sys._current_frames()`
and records each other thread's stack into the current *sink* (one per test
id being attributed in this process). The hot path stores a stack as a flat
tuple of `id(code), f_lasti` pairs: ints hash in nanoseconds, whereas a code
object's hash covers its bytecode and constants and is recomputed on every
lookup, and `f_lineno` scans the code's line table on every access. The code
objects of each new stack are kept alive in a registry (so their ids stay
unique), and stacks are turned into `path:qualname:line` text only when a
sink is written: the raw counts gathered since the last write are folded
into text lines then, so memory stays proportional to distinct source-line
stacks. Sinks form a stack so a pytest item can temporarily take over from a
process-wide test id (the `run` wrapper's) and hand it back. Every `flush`
seconds the current sink is written (complete: false); closing a sink writes
it complete: true.

Besides the samples, each sink holds what the exact function recorder
(recorder.py) saw during its test: the functions first executed at test time,
those executed at import time with the module being imported, the
repository modules imported and the repository files opened for reading (an
audit hook, process.py). Samples whose stack passes through a module or
class body are import-time: they are counted, and their repository frames
join the import-time functions. Stacks are reduced as merge-evidence would
reduce them (runner frames above the first repository frame, and library
frames below the first library frame under a repository frame, are
dropped), which keeps files small. Only when no recorder can be installed,
each sink starts a call-tracing burst (calls.py) instead, written to a
second file, and the header says `coverage: sampled`.

Why a thread rather than a SIGPROF/SIGALRM timer: see docs/Evidence.md
("Sampler choice") for the measurements. With the extension, the thread
waits in C (`_recorder.Ticker`) and takes its ticks there, reading frames in
place and counting stacks until `_settle()` drains them into the innermost
sink; a tick that finds the main thread holding the GIL is the main
thread's own, at its next eval-breaker check, so the thread never waits
for a GIL the main thread keeps (docs/Evidence.md, "Who takes a tick").
Python runs in the thread only for housekeeping: flushes, the SIGTERM
watch, the rank poll.
"""

import _thread
import itertools
import math
import os
import signal
import sys
import threading
import time

from . import calls as _calls
from . import evidence, forks
from . import packages as _packages
from . import recorder as _recorder
from .recorder import _FIND_AND_LOAD
from .frames import ENTRY, FrameDescriber

try:  # the builtin hashlib falls back to: loading OpenSSL costs every traced process 2 ms
    from _sha1 import sha1 as _sha1
except ImportError:  # pragma: no cover - a build without it
    from hashlib import sha1 as _sha1

SAMPLER_VERSION = "2.2"
# The sampling thread's housekeeping (the SIGTERM watch, the rank poll) runs
# at least this often while the main thread lets it have the GIL, and its
# sleeps last at most this long, so that a thread stop() left asleep ends soon.
_HOUSEKEEPING = 0.1
# The test id of the file pytest's process writes for what ran outside every
# test (import-time functions of collection, the distribution tables).
COLLECTION_ID = "<collection>"
# Random per interpreter (fork children share it and differ by pid): made
# once, because os.urandom costs a fork child a dozen copied pages.
_PROCESS_TOKEN = os.urandom(3).hex()

# Signals the sampling thread blocks: all but those a fault raises in the
# thread that caused it (blocking those would make a crash in our own thread
# undiagnosable) and the two no thread can block.
_ASYNCHRONOUS_SIGNALS = signal.valid_signals() - {
    getattr(signal, name) for name in ("SIGSEGV", "SIGBUS", "SIGFPE", "SIGILL", "SIGTRAP",
                                       "SIGSYS", "SIGABRT", "SIGKILL", "SIGSTOP")
    if hasattr(signal, name)}
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def capture(counts, skip_ident, codes, frames=None):
    """Add one sample of every thread's stack except `skip_ident`'s to `counts`.

    Keys are flat tuples `(id(code), lasti, id(code), lasti, ...)`, innermost
    frame first. The code objects of a stack seen for the first time are
    stored in `codes` (id -> code), which keeps them alive, so an id in a key
    always denotes the same code object. Where the `_recorder` extension is
    loaded, its Ticker takes the ticks instead and its drain() hands over
    the same keys. `frames` defaults to `sys._current_frames()`.
    """
    for ident, top in (sys._current_frames() if frames is None else frames).items():
        if ident == skip_ident:
            continue
        key = []
        add = key.append
        frame = top
        while frame is not None:
            add(id(frame.f_code))
            add(frame.f_lasti)
            frame = frame.f_back
        key = tuple(key)
        count = counts.get(key)
        if count is None:
            frame = top
            while frame is not None:
                code = frame.f_code
                codes[id(code)] = code
                frame = frame.f_back
            counts[key] = 1
        else:
            counts[key] = count + 1


_SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")


def sanitize_test_id(test_id):
    """Directory name for a test id: safe characters, bounded, hash-suffixed for uniqueness.

    Each run of other characters becomes one `_`. Without `re`: a traced
    child that never imports it would pay 8 ms for it."""
    digest = _sha1(test_id.encode("utf-8")).hexdigest()[:10]
    readable = "".join("".join(run) if safe else "_"
                       for safe, run in itertools.groupby(test_id, _SAFE.__contains__))
    readable = readable.strip("._")[:100]
    return "%s-%s" % (readable or "test", digest)


def modules_mark():
    """Where sys.modules stands now: its newest (name, module) entry, or None."""
    for _ in range(3):
        try:
            name = next(reversed(sys.modules), None)
            return None if name is None else (name, sys.modules.get(name))
        except RuntimeError:  # another thread imported meanwhile
            continue
    return next(reversed(list(sys.modules.items())), None)


def modules_since(mark):
    """[(name, module)] of the entries sys.modules gained after `mark`.

    Imports append to sys.modules, so these are the entries after the mark,
    found walking back from the newest. The older entries are never
    touched: in a fork child, touching them (even a set of their names)
    copies every page that holds one, a few milliseconds per child of a
    large program. If the mark left sys.modules or was replaced, every
    entry counts: that over-reports imports, it never omits one."""
    for _ in range(3):
        try:
            found = []
            for name in reversed(sys.modules):
                module = sys.modules.get(name)
                if mark is not None and name == mark[0] and module is mark[1]:
                    return found[::-1]
                found.append((name, module))
            return found[::-1]
        except RuntimeError:  # another thread imported meanwhile
            continue
    items = list(sys.modules.items())
    for i in range(len(items) - 1, -1, -1):
        if mark is not None and items[i][0] == mark[0] and items[i][1] is mark[1]:
            return items[i + 1:]
    return items


class Sink:
    """Samples (and call-burst stacks) for one test id in this process, and where they go."""

    def __init__(self, test_id, out_dir, directory=None):
        self.test_id = test_id
        self.counts = {}   # raw capture() keys since the last fold -> samples
        self.lines = {}    # encoded stack line -> samples (folded)
        self.calls = {}    # raw call-burst stacks since the last fold -> count
        self.call_lines = {}
        self.burst = None  # the calls.Burst started for this sink, if any
        self.ticks = 0
        self.sampler_cpu = 0.0  # CPU seconds of its ticks (sampling thread, main-thread captures)
        self.start_wall = time.time()
        self.start_cpu = time.process_time()
        self.opened = time.monotonic()  # flushes wait until it is a flush interval old
        self.closed = False  # its final file is written (Sampler._write)
        self.functions = {}         # id(code) -> code first executed at test time
        self.import_functions = {}  # id(code) -> (code, importer code or None)
        self.import_lines = set()   # (encoded module path, frame) of import-time samples
        self.import_samples = 0
        self.external_samples = 0
        self.reads = set()          # repository-relative paths opened for reading
        self.modules_mark = modules_mark()  # imports since then are this sink's
        self.exact = True           # the recorder ran for the whole sink
        if directory is None:
            directory = os.path.join(out_dir, sanitize_test_id(test_id))
        self.directory = directory
        # Unique among the processes writing into one directory, including
        # ranks in other pid namespaces (containers sharing the output).
        self.path = "%s%s%d-%x-%s.stacks" % (directory, os.sep, os.getpid(), time.time_ns(),
                                             _PROCESS_TOKEN)
        self.calls_path = self.path[:-len(".stacks")] + ".calls.stacks"

    def forked(self, fork=None):
        """A new sink for the same test in a fork child (same directory, own
        file); `fork`: (time.time(), time.process_time(), modules_mark())
        at the fork, when the sink is made later."""
        sink = Sink(self.test_id, None, self.directory)
        if fork is not None:
            sink.start_wall, sink.start_cpu, sink.modules_mark = fork
        return sink


class SamplingThread:
    """The sampling thread: `run(generation)` in a thread of the `_thread` module.

    Not a threading.Thread: starting one costs a fork child (every
    DataLoader worker) 0.3 ms of copied pages for its bookkeeping and the
    wait for the new thread to announce itself, and it would show up in the
    program's threading.enumerate(). Daemonic, like every `_thread` thread.
    """

    def __init__(self, run, *args):
        self._done = _thread.allocate_lock()
        self._done.acquire()
        self.ident = _thread.start_new_thread(self._main, (run, args))

    def _main(self, run, args):
        try:
            # Signals sent to the process go to a thread that does not block
            # them. In ours a handler only sets a flag for the main thread;
            # in the main thread it also interrupts a blocking call (a pool
            # worker waiting for its queue), so that the handler runs.
            if hasattr(signal, "pthread_sigmask"):
                signal.pthread_sigmask(signal.SIG_BLOCK, _ASYNCHRONOUS_SIGNALS)
            run(*args)
        finally:
            self._done.release()

    def is_alive(self):
        """Whether the thread has not returned yet."""
        return self._done.locked()

    def join(self, timeout):
        """Wait up to `timeout` seconds for the thread to return."""
        if self._done.acquire(timeout=timeout):
            self._done.release()


class Sampler:
    """Samples all threads into the innermost open Sink; writes sinks as evidence files.

    `config` is a fastci.trace.config.Config. Errors inside the sampler are
    reported once on stderr and stop sampling; they never propagate into
    the code under test.
    """

    def __init__(self, config, cwd=None):
        self.config = config
        # How the one error message is shown; the pytest plugin replaces this
        # because pytest's output capture would hide it inside a test's output.
        self.report = _report_on_stderr
        self._lock = threading.RLock()
        # Orders the writes of one sink: a flush the sampling thread began
        # must not land after the final file (re-entrant: a SIGTERM
        # handler's final writes may interrupt the main thread's).
        self._write_lock = threading.RLock()
        self._sinks = []
        self._codes = {}  # id(code) -> code for every code in a recorded stack
        self.describer = FrameDescriber(config.root, cwd or os.getcwd(), _PACKAGE_DIR)
        # The directories a parent judged (export_verdicts), before the
        # recorder's exec hook judges any.
        self._verdicts_exported = None
        self._load_verdicts(os.environ.get(ENV_VERDICTS))
        roots = {os.path.join(config.root, ""), os.path.join(os.path.realpath(config.root), "")}
        self._recorder = _recorder.FunctionRecorder(self.describer.in_repository, sorted(roots),
                                                    self.describer.in_repository_file,
                                                    self.describer.outside)
        try:
            exact = self._recorder.start()
        except Exception as e:  # never let the recorder affect the program
            exact = False
            _report_on_stderr("fastci_trace: function recorder disabled: %s: %s"
                              % (type(e).__name__, e))
        self.coverage = "exact" if exact else "sampled"
        # The call burst is the fallback for processes without a recorder.
        self._tracer = _calls.CallTracer(self) if config.calls > 0 and not exact else None
        self._collection = {}  # import-time functions outside every sink (pytest collection)
        self._module_paths = {}  # module name -> repository-relative .py path or None
        self._cwd = cwd or os.getcwd()
        # Opened files are matched by prefix against the root as given and as
        # a real path; the evidence directory and .git are never dependencies.
        self._read_roots = sorted(roots, key=len, reverse=True)
        excluded = [".git" + os.sep]
        for root in self._read_roots:
            out = os.path.join(os.path.realpath(config.out), "")
            if out.startswith(root):
                excluded.append(out[len(root):])
        self._read_excluded = tuple(excluded)
        # Packages: what the process imported from outside the repository
        # (and FastCI), or tried to; the distributions behind them are
        # described once, by pytest's process (describe_distributions).
        self._packages = _packages.ExternalImports(
            self._read_roots + [os.path.join(os.path.dirname(_PACKAGE_DIR), "")],
            modules_mark, modules_since)
        self._packages.install()
        self._encoded_packages = (None, [])  # _package_lines()
        self._distributions = None
        self._rank, self._local_rank = own_ranks(os.environ)
        self._dist_rank = None
        export_ranks(os.environ)
        self._thread = None
        self._ticker = None  # the running thread's _recorder.Ticker, if any
        self._waiting = False  # start(lazily=True) made the Ticker, not yet the thread
        self._ticks_charged = 0.0  # its `cpu` as settled with sinks so far
        self._failed = False
        # What a fork child calls (fork_hooks), and Sink.forked()'s `fork`
        # of a child that was latent.
        self._fork_callbacks = None
        self._fork = None
        # Which thread may sample: stop() and start() move it on, so a thread
        # left sleeping by stop() returns when it wakes (see _run).
        self._generation = 0
        self._asleep = False  # the sampling thread is between two ticks
        # Called by the sampling thread at every return to Python with the
        # monotonic time (process.py's SIGTERM watch), or None. It returns
        # the time by which it wants to be called again, or None.
        self.on_tick = None
        # Called once, by the first begin(): what starts the thread of a
        # process that waits for its first test (process.start), or None.
        self.before_first_test = None

    # -- lifecycle -------------------------------------------------------
    def start(self, lazily=False):
        """Start the sampling thread (idempotent).

        `lazily`, where the Ticker is dormant: the thread itself waits for
        what would wake its Ticker, repository code running at test time
        (the extension calls start_waiting_thread), or for a caller of
        start_waiting_thread. Until then no sample could become an
        evidence line, and what a flush would save are import-time records,
        which the final write (atexit, the SIGTERM handler) saves too; so
        the process does without a thread, whose mere existence makes
        glibc's malloc take its locks and libstdc++'s reference counts turn
        atomic for good: 10-15 ms of a launcher that imports torch and its
        package (docs/Evidence.md, "Overhead").
        """
        if self._thread is not None or self._failed:
            return
        if not self._waiting:
            self._ticker = self._new_ticker()  # here, in the thread that starts sampling
            self._ticks_charged = 0.0
        if lazily and self._ticker is not None and self._ticker.dormant:
            self._waiting = self._recorder.when_repository_runs(self.start_waiting_thread)
            if self._waiting:
                return
        elif self._waiting:
            self._waiting = False
            self._recorder.when_repository_runs(None)
        with self._lock:
            self._asleep = False
            self._generation += 1
            generation = self._generation
        self._thread = SamplingThread(self._run, generation, self._ticker)

    def start_waiting_thread(self):
        """Start the thread that start(lazily=True) left waiting, if any."""
        if self._waiting:
            self.start()

    def _new_ticker(self):
        """A Ticker for the next thread, or None without the extension (then _run sleeps in Python).

        Made here, in the thread that starts sampling: when that is the main
        thread, ticks that find it holding the GIL are its own (_recorder.c).
        Dormant where the recorder is exact: no ticks until repository code
        runs at test time, before which a sample could only count as
        import-time or external (_fold), never become an evidence line.
        That holds because every way in starts sampling before the
        program's own code runs (the start-up hook, the `run` wrapper's
        child, pytest_configure) or in a fork child, which inherits the
        parent's answer. Import-time stacks it only counts there, as _fold
        would (the Ticker's import_samples).
        """
        ticker = self._recorder.native_ticker
        if ticker is None:
            return None
        exact = self.coverage == "exact"
        return ticker(self._sinks, self._codes,
                      main=threading.current_thread() is threading.main_thread(),
                      dormant=exact, imports=_FIND_AND_LOAD if exact else None)

    def stop(self, join=True):
        """Stop the thread and write every open sink as complete.

        A signal handler passes join=False: the thread may be waiting for the
        lock the interrupted main thread holds, so joining could stall. A
        thread asleep between two ticks is not waited for either: it does
        nothing more once it wakes, and waiting out its sleep would cost
        every process up to a sampling interval at exit (most of the wall
        time collection added to a suite whose tests start short-lived
        processes).
        """
        if self._recorder.latent():
            # A latent fork child: nothing recorded, imported, executed or
            # opened, so nothing to report (fork_hooks), and nothing of the
            # sampler's is touched on the way out.
            return
        self._allow_latent_forks(False)
        thread, self._thread = self._thread, None
        if self._waiting:
            self._waiting = False
            self._recorder.when_repository_runs(None)
        if thread is not None:
            with self._lock:
                self._generation += 1
                asleep = self._asleep
            if self._ticker is not None:
                self._ticker.stop()
            if join and not asleep and thread.ident != threading.get_ident():
                thread.join(timeout=5.0)
        if self._tracer is not None:
            self._tracer.close()
        self._harvest()
        with self._lock:
            self._settle(self._sinks[-1] if self._sinks else None)
            sinks, self._sinks = self._sinks, []
        for sink in reversed(sinks):
            self._write(sink, complete=True)
        self._write_collection()
        try:
            self._recorder.close()
        except Exception:
            pass

    def fork_hooks(self, latent, full):
        """What a fork child runs: the callable for os.register_at_fork, or
        None (then `full` goes there).

        While this sampler records exactly (and has not failed), a fork
        child is *latent* (_recorder.c, "Latent fork children"): a
        DataLoader worker runs the library's loop, no repository code, no
        import, no repository file, and its samples could only repeat the
        frames it was forked from, which the parent ran and records. Its
        thread, its own state and its final write were most of what tracing
        cost it, and so was the reset below, in Python: every object it
        touches copies a page of the parent's. A latent child runs none of
        the sampler's code until it records a function, imports or execs
        anything (the extension calls `latent`, which calls
        after_latent_fork()), opens a repository file, or begins or ends a
        test; if it never does, it leaves no file. What it misses: samples
        of repository code the test had already run before the fork (the
        recorder does not record that code again, so running it ends
        nothing): their calling contexts inside the child. Otherwise `full`
        runs in every fork child (after_fork_in_child).
        """
        self._fork_callbacks = (latent, full)
        return self._allow_latent_forks(True)

    def _allow_latent_forks(self, allowed):
        """Hand the extension the fork callbacks, `latent` only where allowed
        and this sampler records exactly; the at-fork callable, or None."""
        if self._fork_callbacks is None:
            return None
        latent, full = self._fork_callbacks
        allowed = allowed and self.coverage == "exact" and self._tracer is None \
            and not self._failed
        return self._recorder.fork_hooks(latent if allowed else None, full)

    def after_fork_in_child(self):
        """Reset for a fork child that is not latent: fresh locks, a fresh sink
        for the same test id, and a new thread (with the call burst, where
        sampled-only)."""
        self._reset_for_child()
        self._fork = None
        self._fork_state()
        if self._sinks:
            self.start()
            self._start_burst(self._sinks[-1])

    def after_latent_fork(self):
        """The latent fork child has something to report (fork_hooks): reset
        as after_fork_in_child() does, from the time of the fork, and sample
        from now on. The extension calls this before the record that ends
        latency is kept, but an import may have put its module into
        sys.modules already: the modules mark is the fork's."""
        try:
            fork = self._recorder.fork_state()
            self._reset_for_child()
            self._fork = fork
            self._fork_state()
            if self._sinks:
                self.start()
        except Exception as e:  # never let the sampler affect the program
            self._fail("sampling stopped: %s: %s" % (type(e).__name__, e))

    def _reset_for_child(self):
        self._lock = threading.RLock()
        self._write_lock = threading.RLock()
        self._thread = None
        self._waiting = False  # the parent's; the child starts its own thread
        # The parent's ticker and its queued tick (_recorder.c ignores it here).
        forks.keep(self._ticker)
        self._ticker = None
        # A fork child is rank-less until torch.distributed says otherwise:
        # its environment is the parent's.
        self._rank, self._local_rank, self._dist_rank = None, "-1", None
        # What the child replaces is kept, not freed (forks.py): freeing the
        # collection's import records alone copied 700 pages per worker.
        forks.keep(self._collection, self._codes)
        self._collection = {}
        if self._tracer is not None:
            self._tracer.after_fork_in_child()

    def _fork_state(self):
        """The fork child's own records, caches, package list and sink in
        place of the parent's: at fork, or when latency ends (sys.modules
        is still the parent's then, after_latent_fork)."""
        # Everything here runs in every fork child that has something to
        # report (a fork-started rank, a pool worker), and each page of the
        # parent's it touches is copied: it does no more than it must. The
        # records taken so far are the parent's, which reports them;
        # nothing is re-armed, so the child records what it runs beyond
        # what the test already ran. A fork child runs no module body it
        # inherited either: the modules in sys.modules now are the parent's
        # (its record lists those the test imported), so the child reports
        # only what it imports itself.
        self._recorder.forget()
        # Caches keyed by code object start empty for the same reason: the
        # child describes the few codes it samples or runs, and a lookup in
        # the parent's tables would copy the page of each entry it returns
        # (an insertion that grows one, the whole table).
        self._codes = {}
        self.describer.forget_codes()
        self._packages.forked(self._fork[2] if self._fork is not None else None)
        if self._sinks:
            self._sinks = [self._sinks[-1].forked(self._fork)]

    # -- attribution -----------------------------------------------------
    def begin(self, test_id):
        """Attribute samples to `test_id` until the matching end().

        Must be called in the thread that runs the test: on CPython < 3.12
        that thread is the one the call burst starts in.
        """
        self._recorder.end_latency()  # a latent fork child has something to report
        starting, self.before_first_test = self.before_first_test, None
        if starting is not None:
            starting()
        self._harvest()
        sink = Sink(test_id, self.config.out)
        with self._lock:
            self._settle(self._sinks[-1] if self._sinks else None)
            self._sinks.append(sink)
        self._recorder.reset()
        export_ranks(os.environ)
        self._start_burst(sink)

    def end(self):
        """Close the innermost sink (write it complete) and resume the one below."""
        if self._tracer is not None:
            self._tracer.stop_burst()
        self._recorder.end_latency()  # a latent fork child has something to report
        self._harvest()
        with self._lock:
            sink = self._sinks.pop() if self._sinks else None
            self._settle(sink)
        self._recorder.reset()
        export_ranks(os.environ)
        if sink is not None:
            self._write(sink, complete=True)

    def flush(self):
        """Write the innermost open sink now (complete: false)."""
        if self._recorder.latent():
            return  # nothing to write (fork_hooks)
        with self._lock:
            sink = self._sinks[-1] if self._sinks else None
        if sink is not None:
            self._write(sink, complete=False)

    def _start_burst(self, sink):
        if self._tracer is not None and not self._failed:
            try:
                sink.burst = self._tracer.start_burst(sink, self.config.calls)
            except Exception as e:
                self._fail("call tracing stopped: %s: %s" % (type(e).__name__, e))

    def _harvest(self):
        """Give what the recorder saw since the last harvest to the innermost sink."""
        try:
            working = self._recorder.working()
            functions, imports = self._recorder.take()
        except Exception as e:
            self._fail("function recorder stopped: %s: %s" % (type(e).__name__, e))
            return
        with self._lock:
            sink = self._sinks[-1] if self._sinks else None
            if sink is None:
                for code, importer in imports:
                    self._collection.setdefault(id(code), (code, importer))
                return
            sink.exact &= working and self.coverage == "exact"
            if not working and self._ticker is not None:
                self._ticker.wake()  # nothing would wake a dormant one now
                self.start_waiting_thread()
            for code in functions:
                sink.functions.setdefault(id(code), code)
            for code, importer in imports:
                sink.import_functions.setdefault(id(code), (code, importer))

    def note_open(self, path):
        """Record `path`, just opened for reading, if it is a repository file (audit hook)."""
        sinks = self._sinks
        if not sinks:
            return
        full = os.path.abspath(path)
        relative = None
        for root in self._read_roots:
            if full.startswith(root):
                relative = full[len(root):]
                break
        if relative is None or relative.startswith(self._read_excluded):
            return
        self._recorder.end_latency()  # a latent fork child has something to report
        self._sinks[-1].reads.add(relative)

    def record_call(self, sink, key, codes):
        """Add one call-burst stack (a capture()-style key) to `sink`; called by the tracer."""
        with self._lock:
            for code in codes:
                self._codes[id(code)] = code
            sink.calls[key] = sink.calls.get(key, 0) + 1

    # -- the thread ------------------------------------------------------
    def _run(self, generation, ticker):
        _calls.untrace_current_thread()  # a thread started inside a burst inherits the profiler
        interval = 1.0 / self.config.rate
        me = threading.get_ident()
        codes = self._codes
        lock = self._lock
        now = time.monotonic()
        next_tick = now + interval
        next_flush = now + self.config.flush
        again = math.inf  # on_tick's next call
        last_cpu = time.thread_time()
        try:
            while True:
                # Asleep is announced and cleared under the lock, each time
                # with the check that this thread may go on: if stop() saw
                # it asleep, the check after the sleep fails.
                with lock:
                    if self._generation != generation or self._failed:
                        return
                    self._asleep = True
                if ticker is not None:
                    # Takes the ticks in C and sleeps without the GIL; ticks
                    # that find the main thread holding it are the main
                    # thread's (_recorder.c). Back here for housekeeping;
                    # while dormant only for a flush: there is no rank to
                    # poll before repository code runs, and the wait
                    # returns by itself for stop() and a SIGTERM.
                    next_tick = ticker.wait(next_tick, interval,
                                            min(next_flush, now + _HOUSEKEEPING, again),
                                            min(next_flush, again))
                else:
                    # time.sleep: one GIL release and one re-acquire per
                    # wake-up, the cheapest wait in Python (an Event's
                    # Condition machinery and a lock's timed acquire cost
                    # more). Slices of at most 0.1 s end a thread stop() left
                    # asleep soon at low rates.
                    time.sleep(max(0.0, min(next_tick - time.monotonic(), _HOUSEKEEPING)))
                with lock:
                    self._asleep = False
                    if self._generation != generation or self._failed:
                        return
                now = time.monotonic()
                if ticker is not None and ticker.error is not None:
                    self._fail("sampler stopped: %s" % ticker.error)
                    return
                if ticker is None and now >= next_tick:
                    self._capture(me, codes)
                    next_tick += interval
                    if next_tick < now:  # we fell behind (GIL held long): don't burst
                        next_tick = now + interval
                sink = self._sinks[-1] if self._sinks else None
                if ticker is None:
                    cpu = time.thread_time()
                    if sink is not None:
                        sink.sampler_cpu += cpu - last_cpu
                    last_cpu = cpu
                if self._tracer is not None:
                    self._tracer.check_budget()
                if self.on_tick is not None:
                    again = self.on_tick(now)
                    if again is None:
                        again = math.inf
                if self._dist_rank is None:
                    # Every wake-up until found: short-lived ranks must not
                    # exit before their rank is read.
                    self._dist_rank = _torch_distributed_rank()
                if now >= next_flush and sink is not None:
                    next_flush = now + self.config.flush
                    # A sink younger than that has nothing a flush must save.
                    if now - sink.opened >= self.config.flush:
                        self._write(sink, complete=False)
        except Exception as e:  # never let the sampler affect the test
            self._fail("sampler stopped: %s: %s" % (type(e).__name__, e))

    def _capture(self, me, codes):
        """One sample of every other thread into the innermost sink (without a Ticker)."""
        with self._lock:
            sink = self._sinks[-1] if self._sinks else None
            if sink is None:
                return
            capture(sink.counts, me, codes)
            sink.ticks += 1

    def _settle(self, sink):
        """Hand `sink` the ticker's samples, ticks and their CPU cost since the last settling.

        With a Ticker the ticks are taken in C, by the sampling thread or
        the main thread, and kept there until the innermost sink changes
        or is written: every caller of this holds the lock and passes the
        sink that was innermost since (None: there was none, and the cost
        is nobody's).
        """
        ticker = self._ticker
        if ticker is None:
            return
        with self._lock:
            if sink is not None:
                try:
                    ticker.drain(sink)
                except Exception as e:  # never let the sampler affect the test
                    self._fail("sampler stopped: %s: %s" % (type(e).__name__, e))
            cpu = ticker.cpu
            if sink is not None:
                sink.sampler_cpu += max(0.0, cpu - self._ticks_charged)
            self._ticks_charged = cpu

    def _fail(self, message):
        if not self._failed:
            self._failed = True
            try:
                self._allow_latent_forks(False)
            except Exception:
                pass
            if self._ticker is not None:
                self._ticker.stop()
            if self._tracer is not None:
                try:
                    self._tracer.close()
                except Exception:
                    pass
            try:
                self.report("fastci_trace: %s" % message)
            except Exception:
                pass

    # -- children --------------------------------------------------------
    def export_verdicts(self, environ):
        """Hand the interpreters this process starts from now on the
        directories it has judged (frames.FrameDescriber.verdicts_text):
        written to a file under the output directory when there are new
        ones, named in `environ` (ENV_VERDICTS). A child started with an
        environment of its own judges every directory itself."""
        judged = self.describer.judged
        if judged == self._verdicts_exported:
            return
        path = os.path.join(self.config.out, VERDICTS_DIR,
                            "%d-%d.verdicts" % (os.getpid(), sum(judged)))
        evidence.write_atomic(path, self.describer.verdicts_text())
        environ[ENV_VERDICTS] = path
        self._verdicts_exported = judged

    def _load_verdicts(self, path):
        if not path:
            return
        try:
            with open(path, encoding="utf-8") as f:
                self.describer.load_verdicts(f.read())
        except (OSError, UnicodeDecodeError):
            pass  # judged here, as without a parent's verdicts

    # -- output ----------------------------------------------------------
    def _write(self, sink, complete, scope="test"):
        """Write `sink`'s file: a flush (complete=False) or its final one.

        Both replace the same file. A flush that finds the final file
        written writes nothing: rendered before it and replaced after it,
        a flush would leave the sink incomplete for good (a test's
        functions cut to those of its first milliseconds).
        """
        if self._failed and complete is False:
            return
        with self._write_lock:
            if sink.closed and complete is False:
                return
            if complete:
                sink.closed = True
            try:
                if scope == "test":
                    self._harvest()
                samples, calls = self._render(sink, complete, scope)
                if calls is not None:
                    evidence.write_atomic(sink.calls_path, calls)
                evidence.write_atomic(sink.path, samples)
            except Exception as e:
                self._fail("cannot write %s: %s" % (sink.path, e))

    def _fold(self, raw, lines, sink=None):
        """Add raw capture()-style stacks to `lines`, keyed by their encoded text.

        With a `sink` (samples, not call-burst stacks), stacks are reduced
        as merge-evidence reduces them, and import-time stacks (through a
        module or class body) are counted there instead, their repository
        frames joining the sink's import-time lines.
        """
        frame_text = self.describer.frame
        in_repository = self.describer.in_repository
        own = (self.describer.exclude, os.path.join(_PACKAGE_DIR, ""))
        codes = self._codes
        classify = _recorder.classify_codes
        for key, count in raw.items():
            if sink is not None:
                import_time, importer = classify(codes[key[i]] for i in range(0, len(key), 2))
                if import_time:
                    self._fold_import(key, count, importer, sink)
                    continue
            frames = []
            after_repository = False
            # key is innermost first: walk the (id, lasti) pairs outermost first
            for i in range(len(key) - 2, -1, -2):
                code = codes[key[i]]
                if sink is not None:
                    if in_repository(code):
                        after_repository = True
                    elif after_repository:
                        after_repository = False  # the library leaf
                    elif code.co_filename.startswith(own):
                        break  # a sampler frame (below: text None)
                    else:
                        # The runner above, or library internals: never
                        # described. Describing resolves files and reads
                        # line tables, and in a fork child every object it
                        # touches costs a copied page.
                        continue
                text = frame_text(code, key[i + 1])
                if text is None:
                    # A sampler frame: it and everything it called (file
                    # writes, joins) is our work, not the test's.
                    break
                frames.append(text)
            if frames:
                stack = ";".join(frames)
                lines[stack] = lines.get(stack, 0) + count
            elif sink is not None:
                sink.external_samples += count

    def _fold_import(self, key, count, importer, sink):
        sink.import_samples += count
        if self.coverage == "exact":
            # The recorder has every import-time function already; entities
            # taken from samples would only add timing-dependent noise.
            return
        module = self._module_field(importer)
        codes = self._codes
        for i in range(0, len(key), 2):
            code = codes[key[i]]
            if self.describer.in_repository(code):
                text = self.describer.frame(code, key[i + 1])
                if text is not None:
                    sink.import_lines.add((module, text))

    def _module_field(self, code):
        """The encoded path of a module/class body code's file, `-` if none."""
        if code is None:
            return "-"
        prefix = self.describer.prefix(code)
        if prefix is None:
            return "-"
        return prefix[:prefix.rindex(":", 0, len(prefix) - 1)]

    def describe_distributions(self):
        """Map every package name seen so far to its installed distributions.

        They go into the collection file written at exit (`@p`, `@q`); one
        scan of the installed metadata, which only pytest's process pays.
        """
        try:
            self._distributions = _packages.distributions(self._packages.names())
        except Exception as e:  # metadata of a broken installation
            self._distributions = None
            self.report("fastci_trace: cannot read installed distributions: %s: %s"
                        % (type(e).__name__, e))

    def _entity_lines(self, sink):
        """The entity line arguments of render() for `sink`, encoded."""
        frame = self.describer.frame
        functions = [t for t in (frame(c, ENTRY) for c in sink.functions.values()) if t]
        imports = set(sink.import_lines)
        for code, importer in sink.import_functions.values():
            text = frame(code, ENTRY)
            if text:
                imports.add((self._module_field(importer), text))
        provides, requires, versions = (), (), ()
        if sink.test_id == COLLECTION_ID and self._distributions is not None:
            provides, requires, versions = self._distributions
        encode = evidence.encode
        return (functions, imports, self._imported_modules(sink),
                [encode(p) for p in sink.reads], self._package_lines(),
                [(encode(d), encode(m)) for d, m in provides],
                [(encode(d), encode(r)) for d, r in requires],
                [(encode(d), encode(v)) for d, v in versions])

    def _package_lines(self):
        """The encoded `@x` names, encoded again only when names() changed."""
        names = self._packages.names()
        if self._encoded_packages[0] is not names:
            self._encoded_packages = (names, [evidence.encode(n) for n in names])
        return self._encoded_packages[1]

    def _imported_modules(self, sink):
        """Encoded repository paths of the modules imported since the sink began."""
        paths = self._module_paths
        result = []
        for name, module in modules_since(sink.modules_mark):
            path = paths.get(name, False)
            if path is False:
                path = None
                filename = getattr(module, "__file__", None)
                if isinstance(filename, str) and filename.endswith(".py"):
                    relative = self.describer.repository_file(filename)
                    if relative is not None:
                        path = evidence.encode(relative)
                paths[name] = path
            if path is not None:
                result.append(path)
        return result

    def _write_collection(self):
        """Write the import-time functions seen outside every test (collection)."""
        if (not self._collection and self._distributions is None) or self._failed:
            return
        sink = Sink(COLLECTION_ID, self.config.out)
        sink.import_functions, self._collection = self._collection, {}
        sink.path = os.path.join(self.config.out, "_collection", os.path.basename(sink.path))
        sink.modules_mark = modules_mark()
        self._write(sink, complete=True, scope="collection")

    def _render(self, sink, complete, scope="test"):
        """(samples file text, calls file text or None) for `sink`."""
        if self._dist_rank is None:
            self._dist_rank = _torch_distributed_rank()
        with self._lock:
            if self._sinks and self._sinks[-1] is sink:
                self._settle(sink)
            raw, sink.counts = sink.counts, {}
            raw_calls, sink.calls = sink.calls, {}
            self._fold(raw, sink.lines, sink)
            self._fold(raw_calls, sink.call_lines)
            lines = dict(sink.lines)
            call_lines = dict(sink.call_lines)
            ticks = sink.ticks
            sampler_cpu = sink.sampler_cpu
            entities = self._entity_lines(sink)
        cfg = self.config
        rank = self._dist_rank if self._dist_rank is not None else self._rank
        header = {
            "test-id": sink.test_id,
            "pid": os.getpid(),
            "rank": rank if rank is not None else -1,
            "local-rank": self._local_rank,
            "rate": "%g" % cfg.rate,
            "wall-seconds": "%.3f" % (time.time() - sink.start_wall),
            "cpu-seconds": "%.3f" % (time.process_time() - sink.start_cpu),
            "python": "%d.%d.%d" % sys.version_info[:3],
            "sampler": SAMPLER_VERSION,
            "revision": cfg.revision,
            "root": cfg.root,
            "samples": sum(lines.values()),
            "complete": "true" if complete else "false",
            "ticks": ticks,
            "flush-seconds": "%g" % cfg.flush,
            "mode": "samples",
            "sampler-cpu-seconds": "%.6f" % sampler_cpu,
            "scope": scope,
            "coverage": "exact" if sink.exact and self.coverage == "exact" else "sampled",
            "recorder": self._recorder.mechanism or "none",
            "time": "%.3f" % sink.start_wall,
            "executable": sys.executable,
            "import-samples": sink.import_samples,
            "external-samples": sink.external_samples,
            "packages": len(entities[4]),
        }
        calls = None
        if call_lines:
            calls_header = dict(header, samples=sum(call_lines.values()), ticks=0, mode="calls")
            calls_header.update(sink.burst.header_fields() if sink.burst is not None else {})
            calls = evidence.render(calls_header, call_lines)
        return evidence.render(header, lines, *entities), calls


def _report_on_stderr(message):
    sys.stderr.write(message + "\n")
    sys.stderr.flush()


ENV_PARENT_RANK = "FASTCI_TRACE_PARENT_RANK"
ENV_PARENT_LOCAL_RANK = "FASTCI_TRACE_PARENT_LOCAL_RANK"
# The verdicts file of the parent process (Sampler.export_verdicts), and
# the folder of the output directory such files go to.
ENV_VERDICTS = "FASTCI_TRACE_VERDICTS"
VERDICTS_DIR = "_verdicts"


def own_ranks(environ):
    """(rank or None, local rank) this process was given by its launcher.

    A RANK (LOCAL_RANK) equal to the one its traced parent had when it
    started it was inherited, not given: torch.multiprocessing.spawn ranks
    of a test that set RANK=0 in its own environment all see RANK=0.
    export_ranks() records the parent's value for this comparison; a
    torch.distributed rank, once a process group is up, overrides both.
    """
    if "--multiprocessing-fork" in sys.argv:
        # A multiprocessing (or torch.multiprocessing) spawn child: its
        # environment is its parent's at the moment of the spawn, which no
        # audit event announces, and multiprocessing never sets ranks.
        return None, "-1"

    def given(name, parent):
        value = environ.get(name)
        if value is None or (parent in environ and environ[parent] == value):
            return None
        return value
    local = given("LOCAL_RANK", ENV_PARENT_LOCAL_RANK)
    return given("RANK", ENV_PARENT_RANK), local if local is not None else "-1"


def export_ranks(environ):
    """Record this process's current RANK/LOCAL_RANK for the children it starts.

    Only what changed is written: each write is a putenv() (and, in a
    process that has forked, copied pages), at every test's begin and end."""
    try:
        for name, parent in (("RANK", ENV_PARENT_RANK), ("LOCAL_RANK", ENV_PARENT_LOCAL_RANK)):
            value = environ.get(name, "")
            if environ.get(parent) != value:
                environ[parent] = value
    except Exception:
        pass


def _torch_distributed_rank():
    """The torch.distributed rank if a process group is up (torch is never imported here)."""
    dist = sys.modules.get("torch.distributed")
    try:
        if dist is not None and dist.is_available() and dist.is_initialized():
            return str(dist.get_rank())
    except Exception:
        pass
    return None
