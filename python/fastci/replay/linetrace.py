"""Full line tracing per test: the ground truth `fastci replay` and the demo's
evaluation (utils/eval) score selection against.

Unlike the sampler (fastci.trace), which sees code only when a tick lands in
it, this records every line executed under `sys.settrace`, so "tests
affected by a change" is defined independently of the evidence FastCI
selects from. It is loaded two ways:

* as a pytest plugin (`-p fastci.replay.linetrace`): lines executed during
  each item (setup, call, teardown) go to that item's node id, lines executed
  outside items (imports at collection) to the pseudo test `<import>`;
* from `_hook/sitecustomize.py` in every child interpreter a traced test
  starts (spawned ranks, `subprocess`, launchers): the whole process,
  imports included, goes to the test id the parent exported in
  `FASTCI_LINETRACE_TEST_ID`. Forked children (multiprocessing, DataLoader
  workers) keep tracing and flush through multiprocessing's exit hook.

Only files under `FASTCI_LINETRACE_ROOT` are traced; frames elsewhere (torch,
the stdlib) get no local tracer, which keeps the overhead tolerable. Each
process writes `<out>/<pid>-<n>.json`: [{"test": id, "files": {path: [lines]},
"calls": {path: [first lines of the functions entered]}}].

The plugin also serves runs without tracing (the replay's mutant runs):
* `FASTCI_REPLAY_RUN` (a JSON file {"run": [ids], "known": [ids]}): only
  items whose id is in `run`, or not in `known` (new tests), are run; the
  others are deselected after collection, so collection (and its imports)
  is always complete;
* `FASTCI_REPLAY_RESULTS` (a path): {"collected": [ids], "results": {id:
  [outcome, seconds]}} is written there at the end, outcome "pass", "fail"
  or "skip" (a failing setup or teardown is "fail"), and "collectable", every
  id collected before `-k`/`-m`/`--deselect` deselected any.
"""

import atexit
import json
import os
import sys
import threading
import time

IMPORT_TEST_ID = "<import>"

ENV_OUT = "FASTCI_LINETRACE_OUT"
ENV_ROOT = "FASTCI_LINETRACE_ROOT"
ENV_TEST_ID = "FASTCI_LINETRACE_TEST_ID"
ENV_RUN = "FASTCI_REPLAY_RUN"
ENV_RESULTS = "FASTCI_REPLAY_RESULTS"


class LineTracer:
    """Collects (file, line) pairs of code under `root`, per current test id."""

    def __init__(self, root, out_dir):
        self.root = os.path.abspath(root) + os.sep
        self.out_dir = out_dir
        self.test_id = IMPORT_TEST_ID
        self.lines = {}  # test id -> {relative path: set(lines)}
        # test id -> {relative path: set(lines of 'call' events)}: the first
        # line of every function entered, which tells calling a function
        # apart from executing its `def` statement at import.
        self.calls = {}
        self._wanted = {}  # code filename -> relative path or None
        self._serial = 0

    def _relative(self, filename):
        rel = self._wanted.get(filename, False)
        if rel is False:
            # Pseudo-files ("<frozen os>", "<string>") would resolve under the cwd.
            path = None if filename.startswith("<") else os.path.abspath(filename)
            rel = os.path.relpath(path, self.root) if path and path.startswith(self.root) else None
            self._wanted[filename] = rel
        return rel

    def _global(self, frame, event, arg):
        rel = self._relative(frame.f_code.co_filename)
        if rel is None:
            return None
        files = self.lines.setdefault(self.test_id, {})
        hits = files.setdefault(rel, set())
        hits.add(frame.f_lineno)
        self.calls.setdefault(self.test_id, {}).setdefault(rel, set()).add(frame.f_lineno)

        def local(frame, event, arg):
            if event == "line":
                hits.add(frame.f_lineno)
            return local
        return local

    def start(self):
        threading.settrace(self._global)
        sys.settrace(self._global)

    def stop(self):
        sys.settrace(None)
        threading.settrace(None)

    def flush(self):
        """Writes what was collected since the last flush to a new file."""
        if not self.lines:
            return
        os.makedirs(self.out_dir, exist_ok=True)
        self._serial += 1
        path = os.path.join(self.out_dir, "%d-%d.json" % (os.getpid(), self._serial))
        records = [{"test": test, "files": {f: sorted(l) for f, l in files.items()},
                    "calls": {f: sorted(l) for f, l in self.calls.get(test, {}).items()}}
                   for test, files in self.lines.items()]
        with open(path + ".tmp", "w") as f:
            json.dump(records, f)
        os.replace(path + ".tmp", path)
        self.lines = {}
        self.calls = {}

    def after_fork_in_child(self):
        """A forked child (multiprocessing, DataLoader workers) keeps tracing
        but records only its own lines, and flushes at its exit: such
        children leave through os._exit, which skips atexit, but runs
        multiprocessing's exit finalizers."""
        self.lines = {}
        self.calls = {}
        self._serial = 0
        try:
            from multiprocessing import util
            util.Finalize(self, LineTracer.flush, args=(self,), exitpriority=100)
        except Exception:
            pass


def _install(tracer):
    tracer.start()
    atexit.register(tracer.flush)
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=tracer.after_fork_in_child)


def hook_dir():
    """The directory whose sitecustomize.py starts tracing in children."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "_hook")


def start_child_from_env():
    """Starts tracing a child interpreter of a traced test (see module doc)."""
    out = os.environ.get(ENV_OUT)
    test = os.environ.get(ENV_TEST_ID)
    root = os.environ.get(ENV_ROOT)
    if not (out and test and root):
        return
    tracer = LineTracer(root, out)
    tracer.test_id = test
    _install(tracer)


def read_line_traces(out_dir: str,
                     calls: "dict | None" = None) -> "dict[str, dict[str, set[int]]]":
    """Merges a trace directory into {test id: {path: set(lines)}}; the
    lines of 'call' events go to `calls` (same shape) when given."""
    merged = {}
    for name in sorted(os.listdir(out_dir)) if os.path.isdir(out_dir) else []:
        if not name.endswith(".json"):
            continue
        try:
            with open(os.path.join(out_dir, name)) as f:
                records = json.load(f)
        except (OSError, ValueError):
            continue  # a process killed while writing: its lines are lost
        for record in records:
            files = merged.setdefault(record["test"], {})
            for path, lines in record["files"].items():
                files.setdefault(path, set()).update(lines)
            if calls is not None:
                entered = calls.setdefault(record["test"], {})
                for path, lines in record.get("calls", {}).items():
                    entered.setdefault(path, set()).update(lines)
    return merged


# -- pytest plugin ------------------------------------------------------------

_tracer = None
_results = {}  # node id -> [outcome, seconds]
_collected = []
_collectable = []


def _start_tracing(config):
    global _tracer
    out = os.environ.get(ENV_OUT)
    if not out or _tracer is not None:
        return
    root = os.environ.get(ENV_ROOT) or str(config.rootpath)
    os.environ[ENV_ROOT] = root
    package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [hook_dir(), package_root] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else []))
    _tracer = LineTracer(root, out)
    _tracer.start()
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=_tracer.after_fork_in_child)


def pytest_load_initial_conftests(early_config, parser, args):
    # Before the first conftest.py is imported: a conftest that imports the
    # package (`import ignite.distributed`) runs every module body of it
    # then, and those module-level lines are the `<import>` lines of every
    # test that executes the files (Coverage.of). Started only at
    # pytest_configure, they were never traced.
    _start_tracing(early_config)


def pytest_configure(config):
    config.pluginmanager.register(_Collectable(), "fastci-replay-collectable")
    _start_tracing(config)


try:
    import pytest as _pytest
    _last = _pytest.hookimpl(trylast=True)
    _first = _pytest.hookimpl(tryfirst=True)
    _wrapper = _pytest.hookimpl(hookwrapper=True)
except ImportError:  # imported by children whose interpreter has no pytest
    def _last(function):
        return function
    _first = _wrapper = _last


class _Collectable:
    """Records every id pytest collected, before `-k`, `-m` or `--deselect`
    drop any: the ids a plan may name (registered by pytest_configure)."""

    @_first
    def pytest_collection_modifyitems(self, session, config, items):
        _collectable[:] = [item.nodeid for item in items]


@_last
def pytest_collection_modifyitems(session, config, items):
    _collected[:] = [item.nodeid for item in items]
    spec = os.environ.get(ENV_RUN)
    if not spec:
        return
    with open(spec) as f:
        wanted = json.load(f)
    run, known = set(wanted.get("run", [])), set(wanted.get("known", []))
    keep = [item for item in items if item.nodeid in run or item.nodeid not in known]
    dropped = [item for item in items if not (item.nodeid in run or item.nodeid not in known)]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    items[:] = keep


@_wrapper
def pytest_runtest_protocol(item, nextitem):
    # A wrapper: pytest_runtest_protocol stops at the first implementation
    # that returns a result, and plugins that rerun tests (flaky,
    # pytest-rerunfailures) return one, so a plain implementation registered
    # before theirs never ran and every line went to `<import>`.
    _results[item.nodeid] = ["pass", 0.0, time.monotonic()]
    if _tracer is not None:
        _tracer.test_id = item.nodeid
        os.environ[ENV_TEST_ID] = item.nodeid
    yield


def pytest_runtest_logreport(report):
    entry = _results.get(report.nodeid)
    if entry is None:
        return
    if report.failed:
        entry[0] = "fail"
    elif report.skipped and report.when in ("setup", "call") and entry[0] == "pass":
        entry[0] = "skip"


def pytest_runtest_logfinish(nodeid, location):
    entry = _results.get(nodeid)
    if entry is not None and len(entry) == 3:
        entry[1] = time.monotonic() - entry.pop()
    if _tracer is not None:
        _tracer.test_id = IMPORT_TEST_ID
        os.environ.pop(ENV_TEST_ID, None)
        # Re-arm: tests that install their own tracer (or settrace(None)) stop ours.
        _tracer.start()


def pytest_unconfigure(config):
    if _tracer is not None:
        _tracer.stop()
        _tracer.flush()
    path = os.environ.get(ENV_RESULTS)
    if path:
        results = {k: v[:2] for k, v in _results.items()}
        with open(path + ".tmp", "w") as f:
            json.dump({"collected": _collected, "collectable": _collectable, "results": results}, f)
        os.replace(path + ".tmp", path)
