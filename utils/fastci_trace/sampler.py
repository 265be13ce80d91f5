"""The sampling thread: periodic stack capture, per-test sinks, periodic flush.

A daemon thread wakes `rate` times a second, takes `sys._current_frames()`
and records each other thread's stack as a tuple of (code, line) pairs into
the current *sink* (one per test id being attributed in this process). Raw
code objects keep the hot path to attribute reads and one dict update; they
are described as `path:qualname:line` only when a sink is written. Sinks form
a stack so a pytest item can temporarily take over from a process-wide test
id (the `run` wrapper's) and hand it back. Every `flush` seconds the current
sink is written (complete: false); closing a sink writes it complete: true.

Why a thread rather than a SIGPROF/SIGALRM timer: see docs/Evidence.md
("Sampler choice") for the measurements.
"""

import hashlib
import os
import re
import sys
import threading
import time

from . import evidence
from .frames import FrameDescriber

SAMPLER_VERSION = "1.0"
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def capture(counts, skip_ident):
    """Add one sample of every thread's stack except `skip_ident`'s to `counts`.

    Keys are tuples of (code, line) pairs, innermost frame first.
    This is the hot path: keep it free of allocation beyond the key.
    """
    for ident, frame in sys._current_frames().items():
        if ident == skip_ident:
            continue
        stack = []
        while frame is not None:
            stack.append((frame.f_code, frame.f_lineno))
            frame = frame.f_back
        key = tuple(stack)
        counts[key] = counts.get(key, 0) + 1


def sanitize_test_id(test_id):
    """Directory name for a test id: safe characters, bounded, hash-suffixed for uniqueness."""
    digest = hashlib.sha1(test_id.encode("utf-8")).hexdigest()[:10]
    readable = re.sub(r"[^A-Za-z0-9._-]+", "_", test_id).strip("._")[:100]
    return "%s-%s" % (readable or "test", digest)


class Sink:
    """Samples for one test id in this process, and where they are written."""

    def __init__(self, test_id, out_dir):
        self.test_id = test_id
        self.counts = {}
        self.ticks = 0
        self.start_wall = time.time()
        self.start_cpu = time.process_time()
        directory = os.path.join(out_dir, sanitize_test_id(test_id))
        unique = "%x-%s" % (time.time_ns(), os.urandom(3).hex())
        self.path = os.path.join(directory, "%d-%s.stacks" % (os.getpid(), unique))


class Sampler:
    """Samples all threads into the innermost open Sink; writes sinks as evidence files.

    `config` is a fastci_trace.config.Config. Errors inside the sampler are
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
        self._describer = FrameDescriber(config.root, cwd or os.getcwd(), _PACKAGE_DIR)
        self._rank = os.environ.get("RANK")
        self._local_rank = os.environ.get("LOCAL_RANK", "-1")
        self._stop = threading.Event()
        self._thread = None
        self._failed = False

    # -- lifecycle -------------------------------------------------------
    def start(self):
        """Start the sampling thread (idempotent)."""
        if self._thread is None and not self._failed:
            self._stop.clear()
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
            self._stop.set()
            if join and thread is not threading.current_thread():
                thread.join(timeout=5.0)
        with self._lock:
            sinks, self._sinks = self._sinks, []
        for sink in reversed(sinks):
            self._write(sink, complete=True)

    def after_fork_in_child(self):
        """Reset for a forked child: fresh lock, fresh sink for the same test id, new thread."""
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._thread = None
        self._rank = os.environ.get("RANK")
        if self._sinks:
            self._sinks = [Sink(self._sinks[-1].test_id, self.config.out)]
            self.start()

    # -- attribution -----------------------------------------------------
    def begin(self, test_id):
        """Attribute samples to `test_id` until the matching end()."""
        sink = Sink(test_id, self.config.out)
        with self._lock:
            self._sinks.append(sink)

    def end(self):
        """Close the innermost sink (write it complete) and resume the one below."""
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

    # -- the thread ------------------------------------------------------
    def _run(self):
        interval = 1.0 / self.config.rate
        me = threading.get_ident()
        next_tick = time.monotonic()
        next_flush = next_tick + self.config.flush
        try:
            while True:
                next_tick += interval
                now = time.monotonic()
                if next_tick < now:  # we fell behind (GIL held long): don't burst
                    next_tick = now + interval
                if self._stop.wait(next_tick - now):
                    return
                with self._lock:
                    sink = self._sinks[-1] if self._sinks else None
                    if sink is not None:
                        capture(sink.counts, me)
                        sink.ticks += 1
                if self._rank is None:
                    self._rank = _torch_distributed_rank()
                if now >= next_flush and sink is not None:
                    next_flush = now + self.config.flush
                    self._write(sink, complete=False)
        except Exception as e:  # never let the sampler affect the test
            self._fail("sampler stopped: %s: %s" % (type(e).__name__, e))

    def _fail(self, message):
        if not self._failed:
            self._failed = True
            self._stop.set()
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
            evidence.write_atomic(sink.path, self._render(sink, complete))
        except Exception as e:
            self._fail("cannot write %s: %s" % (sink.path, e))

    def _render(self, sink, complete):
        lines = {}
        with self._lock:
            items = list(sink.counts.items())
            ticks = sink.ticks
        for raw, count in items:
            frames = []
            for code, line in reversed(raw):  # outermost first
                prefix = self._describer.prefix(code)
                if prefix is None:
                    # A sampler frame: it and everything it called (file
                    # writes, joins) is our work, not the test's.
                    break
                frames.append("%s%d" % (prefix, line or 0))
            if frames:
                key = ";".join(frames)
                lines[key] = lines.get(key, 0) + count
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
        }
        return evidence.render(header, lines)


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
