"""The per-process sampler: start-up, fork, exit and SIGTERM handling.

Each Python process being traced owns exactly one Sampler, kept here. The
sitecustomize hook starts it from the environment in fresh interpreters
(subprocess children, spawn workers, torchrun ranks); the pytest plugin
starts it in the pytest process. This module makes sure every way a process
can end still leaves a complete file: atexit for normal exits, a SIGTERM
handler that flushes and then lets the signal take its normal effect, an
at-fork hook that gives fork children their own file (and thread, once
they have something to report: Sampler.fork_hooks), and a
multiprocessing finalizer for fork workers, which leave via os._exit() and
so skip atexit. An audit hook (recorder.add_audit_hook: a C hook that sees
only the events named, where the extension loads; it cannot be removed
again, so it checks for a running sampler first) records the repository
files each test opens for reading, and refreshes the rank a child inherits
right before the process starts one (see sampler.own_ranks), and the
directories it has judged (Sampler.export_verdicts), also in an environment
of the program's own that starts a traced child (_hand_verdicts).
"""

from __future__ import annotations

import _thread
import atexit
import functools
import os
import signal
import sys
import threading
from collections.abc import Mapping

from . import config as _config
from . import recorder as _recorder
from .sampler import ENV_VERDICTS, Sampler, export_ranks

_sampler = None
_hooks_installed = False
_sigterm_handler_installed = False
_stopping = False        # a final write is in progress
_deferred_signal = None  # SIGTERM that arrived during it, re-raised after


def active() -> Sampler | None:
    """The running Sampler of this process, or None."""
    return _sampler


def start(config: _config.Config, test_id: str | None = None) -> Sampler:
    """Start sampling this process (idempotent: returns the running Sampler).

    If `test_id` is given, samples are attributed to it until exit (or until
    a pytest item temporarily takes over), and the SIGTERM handler is
    installed now; where the Ticker is dormant the sampling thread waits
    until repository code runs at test time or the process starts a
    program (Sampler.start's `lazily`): a launcher imports torch and its
    package first, then runs the package's code or waits for its child,
    with a thread for flushes and the SIGTERM watch. Without a test id
    (pytest's process), the thread and the handler start with the first
    test (Sampler.begin). Until then the process runs collection: imports,
    whose functions the recorder has exactly and whose samples a dormant
    Ticker would not take (Sampler._new_ticker). A thread costs a process
    that imports torch 10-15 ms: once one exists, glibc's malloc takes its
    locks for good (docs/Evidence.md, "Overhead").
    """
    global _sampler
    if _sampler is not None:
        return _sampler
    _sampler = Sampler(config)
    if test_id:
        _sampler.begin(test_id)
    at_fork = _sampler.fork_hooks(_end_fork_latency, _after_fork_in_child)
    _install_hooks(at_fork or _after_fork_in_child)
    if test_id:
        _start_thread(lazily=True)
    else:
        _sampler.before_first_test = _start_thread
    return _sampler


def _start_thread(lazily=False):
    """Start the sampling thread of this process's Sampler (Sampler.start),
    with the SIGTERM handler that ends it and the watch that runs in it."""
    _install_sigterm_handler()
    if _sampler is not None:
        _sampler.on_tick = _sigterm_watch
        _sampler.start(lazily)


def start_from_env(environ: Mapping[str, str] | None = None) -> Sampler | None:
    """Start sampling if the environment names a test id and an output directory.

    Used by the sitecustomize hook. Bad settings are reported once on stderr
    and leave the process unsampled: the program itself must run as usual.
    """
    environ = os.environ if environ is None else environ
    test_id = environ.get(_config.ENV_TEST_ID)
    if not test_id:
        return None
    try:
        cfg = _config.from_env(environ, os.getcwd())
    except _config.ConfigError as e:
        sys.stderr.write("fastci_trace: %s; sampling disabled\n" % e)
        return None
    return None if cfg is None else start(cfg, test_id)


def stop(join: bool = True) -> None:
    """Stop sampling and write every open sink as complete."""
    global _sampler, _stopping
    _stopping = True
    sampler, _sampler = _sampler, None
    try:
        if sampler is not None:
            sampler.stop(join=join)
    finally:
        _stopping = False
        if _deferred_signal is not None:
            _die_by(_deferred_signal)


def _install_hooks(after_fork_in_child):
    global _hooks_installed
    if _hooks_installed:  # they survive stop()/start() and fork
        return
    _hooks_installed = True
    atexit.register(stop)
    # The extension's, where it loads: it makes the child latent without
    # running Python, or calls _after_fork_in_child (Sampler.fork_hooks).
    os.register_at_fork(after_in_child=after_fork_in_child)
    # Two hooks: the suffixes judge opened files, not spawned programs.
    _recorder.add_audit_hook(_on_audit, ("open",), suffixes=_SKIPPED_SUFFIXES)
    _recorder.add_audit_hook(_on_audit, tuple(sorted(_SPAWN_EVENTS)))


# Suffixes never recorded as file dependencies: Python sources (their
# dependencies are the recorder's) and their caches.
_SKIPPED_SUFFIXES = (".py", ".pyc", ".pyo")
# Audit events that start a new program: it must see the rank this process
# has right now (sampler.own_ranks). Not os.fork: a fork child is rank-less
# until torch.distributed says otherwise and has its parent's verdicts, and
# a program it starts raises its own event in the child; in a parent that
# forks DataLoader workers, each event cost ~1 ms of copied pages. Each
# with where its arguments hold the environment it passes the program
# (None: the program inherits os.environ).
_SPAWN_EVENTS = {"subprocess.Popen": 3, "os.posix_spawn": 2, "os.spawn": 3,
                 "os.exec": 2, "os.system": None}
_READ_FLAGS = getattr(os, "O_ACCMODE", 3)


def _on_audit(event, args):
    sampler = _sampler
    if sampler is None:
        return
    if event == "open":
        try:
            path, mode, flags = args
            if isinstance(path, int):
                return  # os.fdopen / open(fd): no name
            if mode is None:  # os.open: flags decide
                if flags & _READ_FLAGS == os.O_WRONLY:
                    return
            elif "r" not in mode and "+" not in mode:
                return
            path = os.fsdecode(path)
            if path.endswith(_SKIPPED_SUFFIXES):
                return
            sampler.note_open(path)
        except Exception:
            pass  # never let bookkeeping break the program's open()
    elif event in _SPAWN_EVENTS:
        if event != "os.exec":  # which replaces this process
            # A launcher waits for its program from now on: flushes and
            # the SIGTERM watch need the thread.
            sampler.start_waiting_thread()
        export_ranks(os.environ)
        try:
            sampler.export_verdicts(os.environ)
            _hand_verdicts(_spawn_environment(event, args))
        except Exception:
            pass  # a judgement the parent made while another thread was judging
        try:
            for path in _spawned_files(event, args):
                sampler.note_open(path)
        except Exception:
            pass


def _spawn_environment(event, args):
    """The environment a spawn event passes the new program, or None (os.environ)."""
    index = _SPAWN_EVENTS[event]
    return args[index] if index is not None and len(args) > index else None


def _hand_verdicts(environment):
    """Name this process's verdicts file in an environment of the program's
    own that starts a traced child.

    Launchers build the environment of the ranks they start from a copy of
    os.environ taken before they import anything (`accelerate launch`,
    torchrun): it names the verdicts their own parent handed them, or none,
    and each child would judge again the directories its launcher just
    judged, 2-3 ms of a child that imports torch. Only a dict that carries
    the test id is touched: its program is about to be traced by us."""
    path = os.environ.get(ENV_VERDICTS)
    if type(environment) is dict and path is not None and _config.ENV_TEST_ID in environment:
        environment[ENV_VERDICTS] = path


def _spawned_files(event, args):
    """The existing non-Python files a spawn names: a script it runs, a config it passes.

    A shell script a test runs is a dependency nobody opens from Python
    (bash reads it); a Python child records its own imports and opens.
    Words of a shell command line (`sh -c "bash run.sh"`) count one by one.
    """
    cwd = None
    if event == "subprocess.Popen":
        executable, argv, cwd = args[0], args[1], args[2]
    elif event in ("os.exec", "os.posix_spawn"):
        executable, argv = args[0], args[1]
    elif event == "os.system":
        executable, argv = None, [args[0]]
    else:
        return ()
    if isinstance(argv, (str, bytes)):
        argv = [argv]
    words = []
    for word in ([executable] if executable is not None else []) + list(argv or ()):
        try:
            words.extend(os.fsdecode(word).split())
        except TypeError:
            continue  # a PathLike of another kind, or an int
    base = os.fsdecode(cwd) if cwd is not None else None
    found = []
    for word in words:
        if word.startswith("-") or word.endswith(_SKIPPED_SUFFIXES):
            continue
        path = os.path.join(base, word) if base is not None else word
        if os.path.isfile(path):
            found.append(path)
    return found


def _after_fork_in_child():
    if _sampler is None:
        return
    _sampler.after_fork_in_child()
    _stop_at_worker_exit(register_now=False)


def _end_fork_latency():
    """A latent fork child has something to report (Sampler.fork_hooks)."""
    if _sampler is None:
        return
    _sampler.after_latent_fork()
    _stop_at_worker_exit(register_now=True)


def _stop_at_worker_exit(register_now):
    """Stop the sampler when a multiprocessing fork worker exits (os._exit,
    past atexit). Process._bootstrap clears the finalizers a worker
    inherited and then runs the after-fork callbacks: right after the fork
    ours is registered from there; later, when whether that has happened
    yet is not known (`register_now`), also at once, since a second stop()
    does nothing."""
    mp_util = sys.modules.get("multiprocessing.util")
    if mp_util is None:
        return
    if register_now:
        _register_mp_finalizer(_sampler)
    mp_util.register_after_fork(_sampler, _register_mp_finalizer)


def _register_mp_finalizer(sampler):
    import multiprocessing.util
    # Negative priority: run in the last finalizer pass, after the worker's own.
    multiprocessing.util.Finalize(None, stop, exitpriority=-100)


def _install_sigterm_handler():
    global _sigterm_watch, _sigterm_handler_installed
    if _sigterm_handler_installed:  # it survives stop()/start() and fork
        return
    if threading.current_thread() is not threading.main_thread():
        return  # only the main thread may install handlers
    _sigterm_handler_installed = True
    previous = signal.getsignal(signal.SIGTERM)
    if previous is signal.SIG_DFL or callable(previous):
        signal.signal(signal.SIGTERM, functools.partial(_on_sigterm, previous))
    # SIG_IGN, or a handler installed from C (None): leave the program's choice alone.
    if previous is signal.SIG_DFL:
        # The process would have died at once: make sure it still does.
        _sigterm_watch = _SigtermWatch.install()


class _SigtermWatch:
    """Ends the process when a SIGTERM's Python handler cannot run.

    Python runs a signal's handler only when the main thread next executes
    bytecode. A main thread blocked in C code that retries on EINTR, or one
    that entered a blocking call just after the signal arrived (a pool
    worker taking its queue's lock while the sampling thread held the GIL),
    never does, and a process SIGTERM would have killed lives on: an
    orphaned multiprocessing worker, a CI job that hangs. The extension
    counts deliveries in front of Python's handler, and a delivery ends the
    sampling thread's sleep; the thread checks the count at each return to
    Python (Sampler.on_tick), again GRACE seconds after a delivery it found
    unhandled, and when that delivery is still unhandled then, writes the
    final files and takes the signal's default action itself.
    """

    GRACE = 0.1  # a main thread running bytecode handles the signal in microseconds

    def __init__(self, module):
        self._deliveries = module.signal_deliveries
        self.handled = self._deliveries()
        self._unhandled_since = None

    @classmethod
    def install(cls):
        """A watch on SIGTERM's current (our) handler, or None without the extension."""
        module = _recorder.extension()
        if module is None or not hasattr(module, "watch_signal"):
            return None
        try:
            if not module.watch_signal(signal.SIGTERM):
                return None
        except OSError:
            return None
        return cls(module)

    def acknowledge(self):
        """The Python handler runs: every delivery so far is handled."""
        self.handled = self._deliveries()

    def __call__(self, now):
        """One check, from the sampling thread, with the monotonic time `now`;
        returns when the next check is due while a delivery is unhandled."""
        if self._deliveries() == self.handled or _stopping:
            self._unhandled_since = None
            return None
        if self._unhandled_since is None:
            self._unhandled_since = now
        elif now - self._unhandled_since >= self.GRACE:
            self.handled = self._deliveries()
            stop(join=False)
            _die_by(signal.SIGTERM)
        return self._unhandled_since + self.GRACE


_sigterm_watch = None  # the _SigtermWatch of this process, if any


def _on_sigterm(previous, signum, frame):
    if _sigterm_watch is not None:
        _sigterm_watch.acknowledge()
    if callable(previous):
        # The program handles SIGTERM itself and may well keep running:
        # save what we have, keep sampling, let atexit write the final file.
        if _sampler is not None:
            _sampler.flush()
        previous(signum, frame)
        return
    if _stopping:
        # We interrupted a final write in progress (e.g. a pool worker exiting
        # while Pool.terminate() signals it): let it finish, then die.
        global _deferred_signal
        _deferred_signal = signum
        return
    stop(join=False)
    _die_by(signum)


def _die_by(signum):
    # Re-deliver with the default action so the process dies "by SIGTERM",
    # exactly as it would have without us. signal.signal() works in the main
    # thread only; the sampling thread (_SigtermWatch) goes through C.
    if _thread.get_ident() != threading.main_thread().ident:
        _recorder.extension().die_by(signum)
        return
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)
