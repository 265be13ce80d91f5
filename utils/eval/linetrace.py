"""Full line tracing: the reference coverage the evaluation scores against.

Unlike the sampler (python/fastci/trace), which sees code only when a 50 Hz
tick lands in it, this records every line executed under `sys.settrace`, so
"tests affected by a change" can be defined independently of the evidence
FastCI selects from. It is used two ways:

* as a pytest plugin (`-p eval.linetrace`, output directory in
  `EVAL_LINETRACE_OUT`): lines executed during each item go to that item's
  node id, lines executed outside items (module imports at collection) to
  the pseudo test `<import>`;
* from `_cov_hook/sitecustomize.py` in child interpreters (spawned ranks of
  distributed tests): the whole process goes to `EVAL_LINETRACE_TEST_ID`.

Only files under `EVAL_LINETRACE_ROOT` are traced; frames elsewhere (torch,
the stdlib) get no local tracer, which keeps the overhead tolerable. Each
process writes `<out>/<pid>-<n>.json`: {"test": id, "files": {path: [lines]}}.
"""

import atexit
import json
import os
import sys
import threading

IMPORT_TEST_ID = "<import>"


class LineTracer:
    """Collects (file, line) pairs of code under `root`, per current test id."""

    def __init__(self, root, out_dir):
        self.root = os.path.abspath(root) + os.sep
        self.out_dir = out_dir
        self.test_id = IMPORT_TEST_ID
        self.lines = {}  # test id -> {relative path: set(lines)}
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
        records = [{"test": test, "files": {f: sorted(l) for f, l in files.items()}}
                   for test, files in self.lines.items()]
        with open(path + ".tmp", "w") as f:
            json.dump(records, f)
        os.replace(path + ".tmp", path)
        self.lines = {}


def start_child_from_env():
    """Starts tracing a child interpreter of a traced test (see module doc)."""
    out = os.environ.get("EVAL_LINETRACE_OUT")
    test = os.environ.get("EVAL_LINETRACE_TEST_ID")
    root = os.environ.get("EVAL_LINETRACE_ROOT")
    if not (out and test and root):
        return
    tracer = LineTracer(root, out)
    tracer.test_id = test
    tracer.start()
    atexit.register(tracer.flush)


def read_line_traces(out_dir):
    """Merges a trace directory into {test id: {path: set(lines)}}."""
    merged = {}
    for name in sorted(os.listdir(out_dir)) if os.path.isdir(out_dir) else []:
        if not name.endswith(".json"):
            continue
        with open(os.path.join(out_dir, name)) as f:
            for record in json.load(f):
                files = merged.setdefault(record["test"], {})
                for path, lines in record["files"].items():
                    files.setdefault(path, set()).update(lines)
    return merged


# -- pytest plugin ------------------------------------------------------------

_tracer = None


def pytest_configure(config):
    global _tracer
    out = os.environ.get("EVAL_LINETRACE_OUT")
    if not out:
        return
    root = os.environ.get("EVAL_LINETRACE_ROOT") or str(config.rootpath)
    os.environ["EVAL_LINETRACE_ROOT"] = root
    hook = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_cov_hook")
    os.environ["PYTHONPATH"] = hook + os.pathsep + os.environ.get("PYTHONPATH", "")
    _tracer = LineTracer(root, out)
    _tracer.start()


def pytest_runtest_protocol(item, nextitem):
    if _tracer is not None:
        _tracer.test_id = item.nodeid
        os.environ["EVAL_LINETRACE_TEST_ID"] = item.nodeid


def pytest_runtest_logfinish(nodeid, location):
    if _tracer is not None:
        _tracer.test_id = IMPORT_TEST_ID
        os.environ.pop("EVAL_LINETRACE_TEST_ID", None)
        # Re-arm: tests that install their own tracer (or settrace(None)) stop ours.
        _tracer.start()


def pytest_unconfigure(config):
    if _tracer is not None:
        _tracer.stop()
        _tracer.flush()
