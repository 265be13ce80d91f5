"""The exact function recorder: every code object a test executes, once, in every thread.

Sampling at 50 Hz misses short functions, and which ones it misses depends on
the machine's load; the recorder makes function-level evidence complete and
deterministic. It records the first execution of each repository code object
per test (reset at every test boundary) and classifies it:

* *test time*: the function started while no module or class body was on
  the stack (below importlib's `_find_and_load`, or a class body);
* *import time*: it ran while a module body executed, e.g. a module-level
  call, a decorator, a class body, or a spawned rank importing the package.
  It is recorded with the module being imported (the innermost module or
  class body frame), and keeps being watched, so that the same code running
  later at test time is recorded as test time as well.

Mechanisms, chosen once per process:

* CPython 3.12+: `sys.monitoring` PY_START and PY_RESUME under a tool id of
  our own; the callback returns DISABLE after the first test-time event of a
  code object, so it costs nothing afterwards, and `restart_events()` re-arms
  everything at the next test. While another tool is registered we never
  DISABLE (restart_events would re-arm its events too) and pay one set
  lookup per call instead.
* CPython 3.11: armed code objects (arming.py): each repository code
  object calls the `_recorder` extension's hit() from a prologue until its
  first test-time execution disarms its function, so steady-state calls
  cost nothing and keep 3.11's inlined Python-to-Python calls. Should a
  code object not be armable, the process falls back to the hook below
  (header `recorder: eval-frame (arming failed: ...)`).
* CPython 3.9-3.10 (and 3.11 with FASTCI_TRACE_RECORDER_MECHANISM=eval-frame):
  the `_recorder` extension (built by CMake from _recorder.c, or by the
  package build), which hooks frame evaluation.
* Neither available (no extension built, another frame-evaluation hook such
  as a JIT installed, both monitoring tool ids taken): `start()` returns
  False, and the sampler falls back to its call burst and says
  `coverage: sampled` in every file.
"""

import gc
import importlib.machinery
import importlib.util
import os
import sys
import types

from . import arming, forks
from .frames import is_pseudo_file

_MONITORING = sys.version_info >= (3, 12) and hasattr(sys, "monitoring")
# sys.monitoring ids 0-2 and 5 are reserved by convention for debuggers,
# coverage, profilers and optimizers; we take the first free of the others.
_TOOL_IDS = (3, 4)
_TOOL_NAME = "fastci_trace"
_CO_OPTIMIZED = 0x0001
_FIND_AND_LOAD = getattr(getattr(sys.modules.get("_frozen_importlib"), "_find_and_load", None),
                         "__code__", None)
# Where a checkout's CMake build puts the extension, relative to this file.
_BUILD_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir,
                          os.pardir, "build", "python", "fastci", "trace")
# The extension's path, exported by the launcher; "off" turns the recorder
# off (sampling and the call burst only, `coverage: sampled`).
ENV_RECORDER = "FASTCI_TRACE_RECORDER"
# "eval-frame" makes CPython 3.11 use the frame-evaluation hook instead of
# armed code objects (to compare the two, utils/bench/recorder_overhead.py).
ENV_MECHANISM = "FASTCI_TRACE_RECORDER_MECHANISM"


def find_extension():
    """Path of a `_recorder` extension built for this interpreter, or None.

    Looked for, in order: $FASTCI_TRACE_RECORDER (a file, exported by the
    launching process so children load the same one), the package directory
    (an installed package), and a checkout's build/python/fastci/trace.
    """
    # Only the interpreter's own ABI tag: a plain `.so` could have been built
    # for another CPython (a child of another version would crash loading it).
    # The import system's list starts with it (sysconfig's EXT_SUFFIX, without
    # importing sysconfig: a millisecond of every traced process's start).
    suffix = next((s for s in importlib.machinery.EXTENSION_SUFFIXES if "cpython-" in s), None)
    if suffix is None:
        return None
    path = os.environ.get(ENV_RECORDER)
    if path == "off":
        return None
    if path and path.endswith(suffix) and os.path.isfile(path):
        return path
    for directory in (os.path.dirname(os.path.abspath(__file__)), _BUILD_DIR):
        candidate = os.path.join(directory, "_recorder" + suffix)
        if os.path.isfile(candidate):
            return os.path.realpath(candidate)
    return None


def _load_extension(path=None):
    """A fresh load of the extension at `path` (default: find_extension()), or None."""
    if _MONITORING:
        return None
    path = path or find_extension()
    if path is None:
        return None
    try:
        spec = importlib.util.spec_from_file_location("fastci.trace._recorder", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    except (ImportError, OSError):
        return None


_EXTENSIONS = {}  # path -> the module loaded from it


def extension():
    """The `_recorder` extension for this interpreter, loaded once per path; None if none."""
    if _MONITORING:
        return None
    path = find_extension()
    if path is None:
        return None
    if path not in _EXTENSIONS:
        _EXTENSIONS[path] = _load_extension(path)
    return _EXTENSIONS[path]


def add_audit_hook(callback, events, suffixes=(), files=None):
    """Call `callback(event, args)` for the audit events named in `events` only.

    Events about a file the callback would ignore can be dropped before
    it: a path (`open`'s str path, the co_filename of `exec`'s code) that
    ends with one of `suffixes`, or whose directory is in `files[0]`, a
    set of absolute directories its owner keeps filling (`files` is a
    one-element list, so that the owner can swap the set), and always a
    name like `<string>` that is no file. Through
    the extension's C hook where it loads: a Python hook costs a Python
    call for every audit event of the process, and on 3.11 every id() and
    frame.f_code is one. Otherwise sys.addaudithook. Either way the hook
    stays for the life of the process."""
    module = extension()
    if module is not None and hasattr(module, "add_audit_hook"):
        module.add_audit_hook(callback, tuple(events), tuple(suffixes),
                              *([files] if files is not None else []))
        return
    wanted = frozenset(events)
    suffixes = tuple(suffixes)

    def hook(event, args):
        if event in wanted and not _dropped(args, suffixes, files):
            callback(event, args)
    sys.addaudithook(hook)


def _dropped(args, suffixes, files):
    """The extension's filter of add_audit_hook(), for the Python hook."""
    path = args[0] if args else None
    if type(path) is types.CodeType:
        path = path.co_filename
    if not isinstance(path, str):
        return False
    if is_pseudo_file(path):
        return True
    if suffixes and path.endswith(suffixes):
        return True
    directories = files[0] if files else None
    return isinstance(directories, (set, frozenset)) and path.rpartition("/")[0] in directories


def claim_tool_id():
    """The first free sys.monitoring tool id of _TOOL_IDS, now ours; None if all are taken."""
    for tool in _TOOL_IDS:
        try:
            sys.monitoring.use_tool_id(tool, _TOOL_NAME)
        except ValueError:  # in use
            continue
        return tool
    return None


def classify_codes(codes):
    """(import time?, innermost module/class body code or None) for a stack's
    code objects, innermost first: import time when importlib's
    _find_and_load or a class body is among them."""
    import_time = False
    importer = None
    for code in codes:
        if code is _FIND_AND_LOAD:
            import_time = True
        elif not code.co_flags & _CO_OPTIMIZED:
            if importer is None:
                importer = code
            if code.co_name != "<module>":
                import_time = True  # a class body runs when its module is imported
    return import_time, importer


def _codes_of(frame):
    while frame is not None:
        yield frame.f_code
        frame = frame.f_back


def classify(frame):
    """classify_codes() for the stack of a live frame."""
    return classify_codes(_codes_of(frame))


# The recorder whose armed code objects are live, for the audit hook: one
# per process (the extension's hit() records into one recorder only).
_armed_recorder = None
_audit_hook_installed = False
# The files whose exec events the audit hook drops: [the armed recorder's
# `outside`], swapped when another recorder arms.
_EXEC_DROPPED = [set()]


def _on_audit(event, args):
    if event == "exec":
        recorder = _armed_recorder
        if recorder is not None:
            recorder._on_exec(args[0])


class FunctionRecorder:
    """Records first executions per test; `take()` hands them over, `reset()` re-arms.

    `in_repository(code)` decides which code is recorded (it may cache by
    id: it only sees code objects kept alive); `prefixes` are the real and
    given repository roots (with a trailing separator), which the extension
    uses as a cheap first filter. `in_repository_file(co_filename)` decides
    the same for code that may die (the code objects armed on 3.11; default:
    in_repository, which must then not cache by id). `outside`, a set of
    absolute directories whose files in_repository_file rejects, which it
    fills (frames.FrameDescriber.outside), lets the audit hook drop their
    exec events before any Python runs.
    """

    def __init__(self, in_repository, prefixes, in_repository_file=None, outside=None):
        self._in_repository = in_repository
        self._arms = (in_repository if in_repository_file is None
                      else lambda code: in_repository_file(code.co_filename))
        self._in_repository_file = in_repository_file
        self._prefixes = tuple(prefixes)
        self._outside = set() if outside is None else outside
        self.mechanism = None
        self._ext = None
        self._module = None  # the extension, once a mechanism of it is installed
        self._tool = None
        self._disable = None
        self._functions = []
        self._imports = []
        self._seen = set()         # ids of test-time codes (monitoring without DISABLE)
        self._import_seen = set()  # ids of import-time codes recorded since reset()
        self._armer = None
        self._set_code = None
        self._set_const = None
        # The extension's Ticker once it is loaded (the sampling thread's
        # wait and capture, sampler._run).
        self.native_ticker = None

    def start(self):
        """Install the recorder; False when no mechanism is available or it is turned off."""
        if os.environ.get(ENV_RECORDER) == "off":
            return False
        if _MONITORING:
            return self._start_monitoring()
        module = extension()
        if module is None:
            return False
        self.native_ticker = getattr(module, "Ticker", None)
        recorder = module.Recorder()
        recorder.configure(self._prefixes, _FIND_AND_LOAD)
        self._module = module
        if (arming.SUPPORTED and hasattr(recorder, "arm") and hasattr(module, "armed_code")
                and os.environ.get(ENV_MECHANISM) != "eval-frame"):
            return self._start_armed(module, recorder)
        if not recorder.install():
            return False
        self._ext = recorder
        self.mechanism = "eval-frame"
        return True

    def working(self):
        """Whether the recorder is still installed (nobody replaced its hook)."""
        if self._ext is not None:
            return self._ext.installed()
        if self._tool is not None:
            return sys.monitoring.get_tool(self._tool) == _TOOL_NAME
        return False

    def hooked(self):
        """Whether the frame-evaluation hook is installed now (never with
        armed code)."""
        return self._ext is not None and self._ext.hooked()

    def take(self):
        """([test-time code], [(import-time code, importer code or None)]) since the last take()."""
        if self._ext is not None:
            functions, imports = self._ext.take()
        else:
            functions, self._functions = self._functions, []
            imports, self._imports = self._imports, []
        in_repository = self._in_repository
        return ([c for c in functions if in_repository(c)],
                [(c, m) for c, m in imports if in_repository(c)])

    def forget(self):
        """In a fork child: drop what was recorded before the fork, unreleased.

        Those records are the parent's, which reports them. The child keeps
        what the test has seen so far (it does not re-arm or re-enable
        anything), so it records the functions it runs beyond those; the
        test's union is the same, and a fork child touches none of the
        parent's code or function objects (each touch copies a page)."""
        if self._ext is not None:
            self._ext.forget()
        else:
            forks.keep(self._functions, self._imports)
            self._functions, self._imports = [], []

    def fork_hooks(self, latent, full):
        """What a fork child calls (_recorder.c, "Latent fork children"): the
        at-fork callable to register with os.register_at_fork, or None where
        the extension cannot tell latency (no extension, or sys.monitoring,
        which records in Python). From then on a fork child is latent until
        it records, imports or executes anything, which calls `latent` once;
        with `latent` None it calls `full` at once. Call again to change them."""
        if self._ext is None or not hasattr(self._module, "set_fork_hooks"):
            return None
        self._module.set_fork_hooks(latent, full)
        return self._module.after_fork_in_child

    def fork_state(self):
        """(time.time(), time.process_time(), sampler.modules_mark()) at the
        fork of this latent child."""
        return self._module.fork_state()

    def latent(self):
        """Whether this process is a latent fork child."""
        return self._module is not None and hasattr(self._module, "latent") and \
            self._module.latent()

    def end_latency(self):
        """The latent fork child has something to report: call `latent`."""
        if self._module is not None and hasattr(self._module, "end_latency"):
            self._module.end_latency()

    def when_repository_runs(self, hook):
        """Call `hook` once, when repository code first runs at test time in
        this process (what wakes a dormant Ticker); False, with nothing
        kept, when it has run already or the extension cannot tell. None
        forgets the hook."""
        if self._module is None or not hasattr(self._module, "set_wake_hook"):
            return False
        return self._module.set_wake_hook(hook)

    def reset(self):
        """Start a new test: every code is recorded again at its next execution."""
        if self._ext is not None:
            self._ext.reset()
        elif self._tool is not None:
            self._seen = set()
            self._import_seen = set()
            if self._disable is not None:
                sys.monitoring.restart_events()

    def close(self, restore=False):
        """Stop recording. Armed code left in functions then calls a hit()
        that does nothing; `restore` gives every function its original code
        back (a heap scan: for benchmarks, not at exit)."""
        global _armed_recorder
        if _armed_recorder is self:
            _armed_recorder = None
        if self._ext is not None:
            self._ext.uninstall()
            # Kept, not freed: freeing it releases every code object it
            # saw, and in a fork child about to exit each release copies a
            # page (10 ms in a DataLoader worker of a torch test).
            forks.keep(self._ext)
            self._ext = None
        if restore and self._armer is not None:
            self._armer.restore_functions(self._set_code)
        if self._tool is not None:
            monitoring = sys.monitoring
            monitoring.set_events(self._tool, 0)
            for event in (monitoring.events.PY_START, monitoring.events.PY_RESUME):
                monitoring.register_callback(self._tool, event, None)
            monitoring.free_tool_id(self._tool)
            self._tool = None

    # -- CPython 3.11: armed code objects --------------------------------------
    def _start_armed(self, module, recorder):
        global _armed_recorder, _audit_hook_installed
        if _armed_recorder is not None:
            return False  # one per process: hit() records into one recorder
        self._armer = arming.Armer(module.hit, self._arms, module)
        self._set_code = module.set_code
        self._set_const = module.set_const
        if not recorder.arm():
            return False
        self._ext = recorder
        self.mechanism = "armed-code"
        _armed_recorder = self
        _EXEC_DROPPED[0] = self._outside
        if not _audit_hook_installed:
            _audit_hook_installed = True  # an audit hook cannot be removed again
            add_audit_hook(_on_audit, ("exec",), files=_EXEC_DROPPED)
        try:
            self._arm_functions()
        except arming.ArmingError as e:
            self._fall_back(e)
        return True

    def _arm_functions(self):
        """Arm the repository functions that exist already (pytest's conftest
        files and plugins, modules imported before the recorder started)."""
        if not self._repository_code_may_have_run():
            return
        armer = self._armer
        arms = self._arms
        for obj in gc.get_objects():
            if type(obj) is types.FunctionType:
                code = obj.__code__
                if id(code) not in armer.variants and arms(code):
                    self._set_code(obj, armer.twins(code)[0])

    def _repository_code_may_have_run(self):
        """False when no module of sys.modules comes from the repository.

        Repository functions exist only once repository code has run, which
        imports its module first; in a child started through the start-up
        hook nothing has run yet, and the heap scan (a few milliseconds per
        process) finds nothing to arm."""
        in_repository_file = self._in_repository_file
        if in_repository_file is None:
            return True
        for module in list(sys.modules.values()):
            filename = getattr(module, "__file__", None)
            if isinstance(filename, str) and in_repository_file(filename):
                return True
        return False

    def _on_exec(self, code):
        """exec() audit event: a module body (or other code) about to run.

        Raised by exec() and eval() of code objects (importlib, pytest's
        assertion rewriter, runpy) and, on 3.11, by the interpreter itself
        for the main script and -c code (pythonrun.c run_mod)."""
        try:
            if (type(code) is not types.CodeType or id(code) in self._armer.variants
                    or not self._arms(code)):
                return
            self._ext.executing(code)
            self._armer.arm_in_place(code, self._set_const)
        except arming.ArmingError as e:
            self._fall_back(e)
        except Exception:
            pass  # an audit hook that raises would abort the program's exec()

    def _fall_back(self, error):
        """Record the rest of the process with the frame-evaluation hook."""
        global _armed_recorder
        _armed_recorder = None
        if self._ext is not None and self._ext.install():
            self.mechanism = "eval-frame (arming failed: %s)" % error
        else:
            self.mechanism = "none (arming failed: %s)" % error

    # -- CPython 3.12+ ------------------------------------------------------
    def _start_monitoring(self):
        monitoring = sys.monitoring
        self._tool = claim_tool_id()
        if self._tool is None:
            return False
        # DISABLE makes each code object cost one callback per test, but
        # re-arming it with restart_events() also re-arms what other tools
        # disabled: with another tool active we never disable.
        alone = all(monitoring.get_tool(t) is None for t in range(6) if t != self._tool)
        self._disable = monitoring.DISABLE if alone else None
        events = monitoring.events
        for event in (events.PY_START, events.PY_RESUME):
            monitoring.register_callback(self._tool, event, self._on_start)
        monitoring.set_events(self._tool, events.PY_START | events.PY_RESUME)
        self.mechanism = "sys.monitoring"
        return True

    def _on_start(self, code, offset):
        key = id(code)
        if key in self._seen:
            return self._disable
        if not self._in_repository(code):
            return sys.monitoring.DISABLE if self._disable is not None else self._mark(key)
        import_time, importer = classify(sys._getframe(1))  # frame 1: `code`'s
        if import_time:
            if key not in self._import_seen:
                self._import_seen.add(key)
                self._imports.append((code, importer))
            return None
        self._seen.add(key)
        self._functions.append(code)
        return self._disable

    def _mark(self, key):
        self._seen.add(key)
        return None
