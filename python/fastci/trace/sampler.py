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

Each sink also starts a call-tracing burst (calls.py): exact function-level
evidence for tests too short for sampling, written to a second file.

Why a thread rather than a SIGPROF/SIGALRM timer: see docs/Evidence.md
("Sampler choice") for the measurements.
"""

import hashlib
import os
import re
import sys
import threading
import time

from . import calls as _calls
from . import evidence
from .frames import FrameDescriber

SAMPLER_VERSION = "1.1"
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def capture(counts, skip_ident, codes):
    """Add one sample of every thread's stack except `skip_ident`'s to `counts`.

    Keys are flat tuples `(id(code), lasti, id(code), lasti, ...)`, innermost
    frame first. The code objects of a stack seen for the first time are
    stored in `codes` (id -> code), which keeps them alive, so an id in a key
    always denotes the same code object. This is the hot path.
    """
    for ident, top in sys._current_frames().items():
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


def sanitize_test_id(test_id):
    """Directory name for a test id: safe characters, bounded, hash-suffixed for uniqueness."""
    digest = hashlib.sha1(test_id.encode("utf-8")).hexdigest()[:10]
    readable = re.sub(r"[^A-Za-z0-9._-]+", "_", test_id).strip("._")[:100]
    return "%s-%s" % (readable or "test", digest)


class Sink:
    """Samples (and call-burst stacks) for one test id in this process, and where they go."""

    def __init__(self, test_id, out_dir):
        self.test_id = test_id
        self.counts = {}   # raw capture() keys since the last fold -> samples
        self.lines = {}    # encoded stack line -> samples (folded)
        self.calls = {}    # raw call-burst stacks since the last fold -> count
        self.call_lines = {}
        self.burst = None  # the calls.Burst started for this sink, if any
        self.ticks = 0
        self.sampler_cpu = 0.0  # CPU seconds of the sampling thread charged to this sink
        self.start_wall = time.time()
        self.start_cpu = time.process_time()
        directory = os.path.join(out_dir, sanitize_test_id(test_id))
        unique = "%x-%s" % (time.time_ns(), os.urandom(3).hex())
        self.path = os.path.join(directory, "%d-%s.stacks" % (os.getpid(), unique))
        self.calls_path = self.path[:-len(".stacks")] + ".calls.stacks"


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
        self._sinks = []
        self._codes = {}  # id(code) -> code for every code in a recorded stack
        self.describer = FrameDescriber(config.root, cwd or os.getcwd(), _PACKAGE_DIR)
        self._tracer = _calls.CallTracer(self) if config.calls > 0 else None
        self._rank = os.environ.get("RANK")
        self._local_rank = os.environ.get("LOCAL_RANK", "-1")
        self._stopping = False
        self._thread = None
        self._failed = False

    # -- lifecycle -------------------------------------------------------
    def start(self):
        """Start the sampling thread (idempotent)."""
        if self._thread is None and not self._failed:
            self._stopping = False
            self._thread = threading.Thread(target=self._run, name="fastci_trace-sampler",
                                            daemon=True)
            self._thread.start()

    def stop(self, join=True):
        """Stop the thread and write every open sink as complete.

        A signal handler passes join=False: the thread may be waiting for the
        lock the interrupted main thread holds, so joining could stall.
        """
        thread, self._thread = self._thread, None
        if thread is not None:
            self._stopping = True
            if join and thread is not threading.current_thread():
                thread.join(timeout=5.0)
        if self._tracer is not None:
            self._tracer.close()
        with self._lock:
            sinks, self._sinks = self._sinks, []
        for sink in reversed(sinks):
            self._write(sink, complete=True)

    def after_fork_in_child(self):
        """Reset for a forked child: fresh lock, fresh sink and burst for the same test id, new thread."""
        self._lock = threading.RLock()
        self._thread = None
        self._rank = os.environ.get("RANK")
        if self._tracer is not None:
            self._tracer.after_fork_in_child()
        if self._sinks:
            self._sinks = [Sink(self._sinks[-1].test_id, self.config.out)]
            self.start()
            self._start_burst(self._sinks[-1])

    # -- attribution -----------------------------------------------------
    def begin(self, test_id):
        """Attribute samples to `test_id` until the matching end().

        Must be called in the thread that runs the test: on CPython < 3.12
        that thread is the one the call burst starts in.
        """
        sink = Sink(test_id, self.config.out)
        with self._lock:
            self._sinks.append(sink)
        self._start_burst(sink)

    def end(self):
        """Close the innermost sink (write it complete) and resume the one below."""
        if self._tracer is not None:
            self._tracer.stop_burst()
        with self._lock:
            sink = self._sinks.pop() if self._sinks else None
        if sink is not None:
            self._write(sink, complete=True)

    def flush(self):
        """Write the innermost open sink now (complete: false)."""
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

    def record_call(self, sink, key, codes):
        """Add one call-burst stack (a capture()-style key) to `sink`; called by the tracer."""
        with self._lock:
            for code in codes:
                self._codes[id(code)] = code
            sink.calls[key] = sink.calls.get(key, 0) + 1

    # -- the thread ------------------------------------------------------
    def _run(self):
        _calls.untrace_current_thread()  # a thread started inside a burst inherits the profiler
        interval = 1.0 / self.config.rate
        me = threading.get_ident()
        codes = self._codes
        next_tick = time.monotonic()
        next_flush = next_tick + self.config.flush
        next_rank_poll = next_tick
        last_cpu = time.thread_time()
        try:
            while True:
                next_tick += interval
                now = time.monotonic()
                if next_tick < now:  # we fell behind (GIL held long): don't burst
                    next_tick = now + interval
                # time.sleep: one GIL release and one re-acquire per tick, the
                # cheapest wait measured (an Event's Condition machinery and a
                # lock's timed acquire cost more CPU per wake-up). Slices of at
                # most 0.1 s keep stop() prompt at low rates.
                while True:
                    time.sleep(min(next_tick - now, 0.1))
                    if self._stopping or self._failed:
                        return
                    now = time.monotonic()
                    if now >= next_tick:
                        break
                with self._lock:
                    sink = self._sinks[-1] if self._sinks else None
                    if sink is not None:
                        capture(sink.counts, me, codes)
                        sink.ticks += 1
                cpu = time.thread_time()
                if sink is not None:
                    sink.sampler_cpu += cpu - last_cpu
                last_cpu = cpu
                if self._tracer is not None:
                    self._tracer.check_budget()
                if self._rank is None and now >= next_rank_poll:
                    next_rank_poll = now + 0.5
                    self._rank = _torch_distributed_rank()
                if now >= next_flush and sink is not None:
                    next_flush = now + self.config.flush
                    self._write(sink, complete=False)
        except Exception as e:  # never let the sampler affect the test
            self._fail("sampler stopped: %s: %s" % (type(e).__name__, e))

    def _fail(self, message):
        if not self._failed:
            self._failed = True
            if self._tracer is not None:
                try:
                    self._tracer.close()
                except Exception:
                    pass
            try:
                self.report("fastci_trace: %s" % message)
            except Exception:
                pass

    # -- output ----------------------------------------------------------
    def _write(self, sink, complete):
        if self._failed and complete is False:
            return
        try:
            os.makedirs(os.path.dirname(sink.path), exist_ok=True)
            samples, calls = self._render(sink, complete)
            if calls is not None:
                evidence.write_atomic(sink.calls_path, calls)
            evidence.write_atomic(sink.path, samples)
        except Exception as e:
            self._fail("cannot write %s: %s" % (sink.path, e))

    def _fold(self, raw, lines):
        """Add raw capture()-style stacks to `lines`, keyed by their encoded text."""
        frame_text = self.describer.frame
        codes = self._codes
        for key, count in raw.items():
            frames = []
            # key is innermost first: walk the (id, lasti) pairs outermost first
            for i in range(len(key) - 2, -1, -2):
                text = frame_text(codes[key[i]], key[i + 1])
                if text is None:
                    # A sampler frame: it and everything it called (file
                    # writes, joins) is our work, not the test's.
                    break
                frames.append(text)
            if frames:
                stack = ";".join(frames)
                lines[stack] = lines.get(stack, 0) + count

    def _render(self, sink, complete):
        """(samples file text, calls file text or None) for `sink`."""
        with self._lock:
            raw, sink.counts = sink.counts, {}
            raw_calls, sink.calls = sink.calls, {}
            self._fold(raw, sink.lines)
            self._fold(raw_calls, sink.call_lines)
            lines = dict(sink.lines)
            call_lines = dict(sink.call_lines)
            ticks = sink.ticks
            sampler_cpu = sink.sampler_cpu
        cfg = self.config
        header = {
            "test-id": sink.test_id,
            "pid": os.getpid(),
            "rank": self._rank if self._rank is not None else -1,
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
        }
        calls = None
        if call_lines:
            calls_header = dict(header, samples=sum(call_lines.values()), ticks=0, mode="calls")
            calls_header.update(sink.burst.header_fields() if sink.burst is not None else {})
            calls = evidence.render(calls_header, call_lines)
        return evidence.render(header, lines), calls


def _report_on_stderr(message):
    sys.stderr.write(message + "\n")
    sys.stderr.flush()


def _torch_distributed_rank():
    """The torch.distributed rank if a process group is up (torch is never imported here)."""
    dist = sys.modules.get("torch.distributed")
    try:
        if dist is not None and dist.is_available() and dist.is_initialized():
            return str(dist.get_rank())
    except Exception:
        pass
    return None
