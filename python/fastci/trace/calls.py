"""The call burst: exact function-level evidence for tests too short to be sampled.

At 50 Hz a test that runs for a few milliseconds is usually never sampled,
so its evidence would be empty. For the first `budget` CPU seconds of each
test in each process, this module therefore also traces calls and records
the current stack once per code object:

* CPython 3.9-3.11: `sys.setprofile` in the thread that begins the test and
  `threading.setprofile` for threads started while the burst is on. The
  profile function sees every Python call and return; it records the stack
  at the first call of each code object (one dict lookup by id otherwise).
* CPython 3.12+: `sys.monitoring` PY_START events for all threads, under a
  tool id of our own. The callback records the stack at the first call of
  each code object and returns DISABLE, so every later call of that code
  costs nothing; `restart_events()` re-arms all code at the next test.

Only calls that touch the repository are recorded: the callee is repository
code, or the caller is (a library leaf such as `torch.distributed.all_reduce`,
the frame merge-evidence keeps below a repository frame). The stack is stored
like a sample (`id(code), f_lasti` pairs, innermost first) with the callee's
offset replaced by frames.ENTRY, so its frame names its first body line.
The burst ends when the test ends or when the process has used `budget` CPU
seconds since it began, not counting time spent importing (checked at every
first call and by the sampling thread at every tick), after which plain
sampling goes on. docs/Evidence.md ("Call bursts") has the file
format and the measured cost.
"""

import sys
import threading
import time

from .frames import ENTRY

# The burst runs only where the recorder could not, so it may take the same
# sys.monitoring tool ids.
from .recorder import _FIND_AND_LOAD, _MONITORING, claim_tool_id  # noqa: E402

# CPU time spent inside an import is not charged to the budget, up to this
# many budgets: a process started under a test (a spawned rank) would
# otherwise spend its whole budget on `import torch` before reaching the
# repository's code, and tracing an import costs little (most of its time is
# in C and in module bodies that run once).
IMPORT_ALLOWANCE = 20


def _threading_profile():
    """The profile function threading gives new threads (getprofile() is 3.10+)."""
    getter = getattr(threading, "getprofile", None)
    return getter() if getter is not None else getattr(threading, "_profile_hook", None)


def _is_ours(function):
    return getattr(function, "_fastci_trace", False)


def untrace_current_thread():
    """Remove a burst's profile function from the calling thread (CPython < 3.12)."""
    if not _MONITORING and _is_ours(sys.getprofile()):
        sys.setprofile(None)


def _in_import(frame):
    """Whether `frame` runs inside an import (below importlib's _find_and_load)."""
    while frame is not None:
        if frame.f_code is _FIND_AND_LOAD:
            return True
        frame = frame.f_back
    return False


class Burst:
    """The call tracing of one test (one sink) in this process."""

    def __init__(self, sink, budget, mechanism):
        self.sink = sink
        self.budget = budget
        self.mechanism = mechanism
        self.start_cpu = time.process_time()
        self.deadline = self.start_cpu + budget
        self.last_cpu = self.start_cpu  # process CPU time at the last budget check
        self.importing = False           # whether the last first call was inside an import
        self.import_cpu = 0.0            # CPU seconds not charged because they were imports
        self.stop_cpu = None
        self.exhausted = False
        self.stopped = [False]  # read by the profile functions of every thread
        self.seen = {}          # id(code) of every code object called in this burst
        self.profile = None     # the profile function (CPython < 3.12)
        self.disable = None     # what the PY_START callback returns (3.12+)

    def header_fields(self):
        """Header keys describing this burst in the calls file."""
        end = self.stop_cpu if self.stop_cpu is not None else time.process_time()
        return {
            "calls-mechanism": self.mechanism,
            "calls-budget-seconds": "%g" % self.budget,
            "calls-cpu-seconds": "%.3f" % (end - self.start_cpu),
            "calls-exhausted": "true" if self.exhausted else "false",
            "calls-import-seconds": "%.3f" % self.import_cpu,
        }

    def charge(self, importing):
        """Account the CPU time since the last check; True once the budget is spent.

        The interval is credited back when the thread that got here last (at
        a first call) was inside an import, within IMPORT_ALLOWANCE budgets.
        """
        now = time.process_time()
        if importing and self.import_cpu < IMPORT_ALLOWANCE * self.budget:
            credit = now - self.last_cpu
            self.import_cpu += credit
            self.deadline += credit
        self.last_cpu = now
        return now >= self.deadline


class CallTracer:
    """Starts and stops one Burst at a time for a Sampler, which stores the stacks."""

    def __init__(self, sampler):
        self._sampler = sampler
        self._codes = sampler._codes  # id -> code registry: ids stay unique while listed
        self._in_repository = sampler.describer.in_repository
        self._burst = None
        self._tool = None
        self._used_disable = False

    # -- control ---------------------------------------------------------
    def start_burst(self, sink, budget):
        """Start tracing calls into `sink` (stopping any previous burst); returns the Burst or None."""
        self.stop_burst()
        if _MONITORING:
            return self._start_monitoring(sink, budget)
        current = sys.getprofile()
        if current is not None and not _is_ours(current):
            return None  # someone else (cProfile, a debugger) profiles this thread
        burst = Burst(sink, budget, "setprofile")
        burst.profile = self._make_profiler(burst)
        self._burst = burst
        if _threading_profile() is None or _is_ours(_threading_profile()):
            threading.setprofile(burst.profile)
        sys.setprofile(burst.profile)
        return burst

    def stop_burst(self, exhausted=False):
        """End the current burst. Other threads drop the profiler at their next call."""
        burst, self._burst = self._burst, None
        if burst is None:
            return
        burst.stopped[0] = True
        burst.seen.clear()  # sends every thread's next call down the slow path
        burst.exhausted = exhausted
        burst.stop_cpu = time.process_time()
        if _MONITORING:
            sys.monitoring.set_events(self._tool, 0)
        else:
            if _threading_profile() is burst.profile:
                threading.setprofile(None)
            if sys.getprofile() is burst.profile:
                sys.setprofile(None)

    def check_budget(self):
        """Stop the burst if the process spent its CPU budget (the sampling thread, each tick)."""
        burst = self._burst
        if burst is not None and burst.charge(burst.importing):
            self.stop_burst(exhausted=True)

    def after_fork_in_child(self):
        """Forget the parent's burst: the child starts its own for its own file."""
        burst, self._burst = self._burst, None
        if burst is not None:
            burst.stopped[0] = True
            burst.seen.clear()
            if not _MONITORING and _threading_profile() is burst.profile:
                threading.setprofile(None)

    def close(self):
        """Stop for good and give the sys.monitoring tool id back."""
        self.stop_burst()
        if self._tool is not None:
            monitoring = sys.monitoring
            monitoring.register_callback(self._tool, monitoring.events.PY_START, None)
            monitoring.free_tool_id(self._tool)
            self._tool = None

    # -- CPython 3.9-3.11: sys.setprofile ------------------------------------
    def _make_profiler(self, burst):
        seen = burst.seen
        new_code = self._new_code

        def profile(frame, event, arg):
            # Runs on every call, return and C call of the traced threads:
            # keep the common case (code seen before) to one dict lookup.
            # stop_burst() empties `seen`, so the next call of every thread
            # takes the slow path and removes the profiler there.
            if event == "call":
                key = id(frame.f_code)
                if key not in seen:
                    new_code(burst, frame, key)

        profile._fastci_trace = True
        return profile

    def _new_code(self, burst, frame, key):
        if burst.stopped[0]:
            if sys.getprofile() is burst.profile:
                sys.setprofile(None)
            return
        self._first_call(burst, frame, key)

    # -- CPython 3.12+: sys.monitoring ---------------------------------------
    def _start_monitoring(self, sink, budget):
        monitoring = sys.monitoring
        if self._tool is None:
            self._tool = claim_tool_id()
            if self._tool is None:
                return None
            monitoring.register_callback(self._tool, monitoring.events.PY_START,
                                         self._on_py_start)
        burst = Burst(sink, budget, "sys.monitoring")
        # DISABLE makes each code object cost one callback per test, but
        # re-arming it with restart_events() also re-arms what other tools
        # disabled; when another tool is active we never disable, and pay a
        # callback per call for the length of the burst instead.
        alone = all(monitoring.get_tool(t) is None for t in range(6) if t != self._tool)
        burst.disable = monitoring.DISABLE if alone else None
        if self._used_disable:
            monitoring.restart_events()
        self._used_disable = self._used_disable or alone
        self._burst = burst
        monitoring.set_events(self._tool, monitoring.events.PY_START)
        return burst

    def _on_py_start(self, code, offset):
        burst = self._burst
        if burst is None:
            return sys.monitoring.DISABLE  # re-armed by the next burst
        key = id(code)
        if key in burst.seen:
            return burst.disable
        self._first_call(burst, sys._getframe(1), key)  # frame 1: `code`'s, just started
        return burst.disable

    # -- both ----------------------------------------------------------------
    def _first_call(self, burst, frame, key):
        """Handle the first call of a code object in this burst; never raises into the test."""
        try:
            self._first_call_unguarded(burst, frame, key)
        except Exception as e:
            self.stop_burst()
            self._sampler._fail("call tracing stopped: %s: %s" % (type(e).__name__, e))

    def _first_call_unguarded(self, burst, frame, key):
        """Record the first call of a code object in this burst if it touches the repository."""
        # Also checked here, not only at the sampling thread's ticks: that
        # thread cannot tick while a long C call (loading an extension) holds
        # the GIL.
        burst.importing = _in_import(frame)
        if burst.charge(burst.importing):
            self.stop_burst(exhausted=True)
            return
        code = frame.f_code
        burst.seen[key] = None
        codes = self._codes
        codes[key] = code  # before in_repository(), which caches by id
        back = frame.f_back
        caller = back.f_code if back is not None else None
        if caller is not None:
            codes[id(caller)] = caller
        if self._in_repository(code) or (caller is not None and self._in_repository(caller)):
            self._record(burst, frame)

    def _record(self, burst, frame):
        """Store the stack of `frame`, just entered, in the burst's sink."""
        key = [id(frame.f_code), ENTRY]
        codes = [frame.f_code]
        frame = frame.f_back
        while frame is not None:
            codes.append(frame.f_code)
            key.append(id(frame.f_code))
            key.append(frame.f_lasti)
            frame = frame.f_back
        self._sampler.record_call(burst.sink, tuple(key), codes)
