#!/usr/bin/python3
"""Function-level recall, determinism, size and cost of the evidence on a real pytest suite.

Runs a suite (default: the demo's unit suite, test/workloads/minitron
tests/unit) under the reference line tracer (utils/eval/linetrace.py:
`sys.settrace`, every line of every process a test starts) and twice under
`fastci.trace` (once on a quiet machine, once with `--load N` busy-looping
processes running beside it), then prints:

* recall: of the functions each test executes according to the line tracer
  (any line of the function's own body ran, in any of the test's processes),
  the share its evidence names (`@f` test-time plus `@i` import-time lines);
  functions are identified as (file, innermost def/class containing the
  line), computed the same way for both sides, so names never disagree;
* determinism: tests whose entity lines (functions, import-time functions,
  imports, reads) are identical between the quiet and the loaded run;
* size: bytes and files of one run's evidence, and scaled to 1,300 tests;
* with `--pairs N`: wall time and CPU seconds of the plain suite against
  the suite with evidence collection, N interleaved pairs (ABBA...), median
  and spread; `--peer-env FASTCI_TRACE_RECORDER_MECHANISM=eval-frame` adds
  collection with CPython 3.11's frame-evaluation hook to the same rounds
  (`--peer-env FASTCI_TRACE_RECORDER=off`: collection without a recorder).

Usage: /usr/bin/python3 utils/bench/evidence_recall.py [--tree DIR] [--paths P ...]
       [--load N] [--pairs N [--peer-env KEY=VALUE ...]] [--keep DIR]
"""

import argparse
import ast
import glob
import json
import multiprocessing
import os
import shutil
import statistics
import sys
import tempfile
import time

UTILS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROOT = os.path.dirname(UTILS)
PACKAGE_ROOT = os.path.join(ROOT, "python")
sys.path.insert(0, PACKAGE_ROOT)

sys.path.insert(0, UTILS)

from eval.suite import run_unit_suite  # noqa: E402
from fastci.trace.evidence import read_evidence_file  # noqa: E402
from fastci.trace.recorder import ENV_MECHANISM  # noqa: E402


def _busy(stop_at):
    while time.time() < stop_at:
        pass


def _first_line(node):
    """A statement's first line, its decorators included."""
    return min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", ())])


def evidence_scope(frame):
    """(path, scope) of an evidence frame, named as Scopes names them: the
    qualname without `<locals>`, lambdas and comprehensions folded into their
    enclosing function."""
    parts = [p for p in frame.qualname.split(".") if p != "<locals>"]
    while len(parts) > 1 and parts[-1].startswith("<"):
        parts.pop()
    return (frame.path, ".".join(parts) if parts != ["<module>"] else "<module>")


class Scopes:
    """(path, line) -> innermost def/class (qualname-like key) of that file, else `<module>`."""

    def __init__(self, root):
        self.root = root
        self._files = {}

    def _index(self, path):
        spans = []
        try:
            with open(os.path.join(self.root, path), "rb") as f:
                tree = ast.parse(f.read())
        except (OSError, SyntaxError, ValueError):
            return spans

        def visit(node, prefix):
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    name = prefix + child.name
                    # The body only. The decorator and def lines belong to
                    # no scope here: a line tracer reports them for the
                    # definition (enclosing scope) and for every call
                    # (`call` event at the def line), which would credit
                    # the enclosing module or class with every call.
                    body = _first_line(child.body[0])
                    spans.append((_first_line(child), body - 1, None))
                    spans.append((body, child.end_lineno, name))
                    visit(child, name + ".")
                else:
                    visit(child, prefix)
        visit(tree, "")
        return spans

    def scope(self, path, line):
        spans = self._files.get(path)
        if spans is None:
            spans = self._files[path] = self._index(path)
        best = None
        for start, end, name in spans:
            if start <= line <= end and (best is None or start >= best[0]):
                best = (start, name)
        if best is not None and best[1] is None:
            return None
        return (path, best[1] if best else "<module>")


def run_suite(tree, paths, out=None, linetrace=None):
    """Wall seconds of one run of the suite (utils/eval/suite.py's runner).

    The CPU seconds of its processes (user + system, all children) are
    appended to CPU_SECONDS: on a shared machine they swing far less than
    wall time."""
    start, before = time.perf_counter(), os.times()
    run_unit_suite(tree, os.path.dirname(tree), evidence_dir=out, linetrace_dir=linetrace,
                   paths=paths)
    after = os.times()
    CPU_SECONDS.append(after.children_user + after.children_system
                       - before.children_user - before.children_system)
    return time.perf_counter() - start


CPU_SECONDS = []
TREE_PREFIX = "tree/"


def truth_functions(linetrace, scopes):
    """{test id: {(path, scope)}} from the line tracer's files."""
    found = {}
    for path in glob.glob(os.path.join(linetrace, "*.json")):
        with open(path) as f:
            records = json.load(f)
        for data in records:
            names = found.setdefault(data["test"], set())
            for file, lines in data["files"].items():
                rel = os.path.relpath(file, scopes.root) if os.path.isabs(file) else file
                for line in lines:
                    scope = scopes.scope(rel, line) if line > 0 else None
                    if scope is not None:
                        names.add(scope)
    return found


def evidence_of(out, scopes):
    """{test id: (functions {(path, scope)}, entity lines for determinism)}."""
    found = {}
    for path in glob.glob(os.path.join(out, "**", "*.stacks"), recursive=True):
        ev = read_evidence_file(path)
        # Without an ini file, pytest takes the rootdir from its path
        # arguments, and `--fastci-trace-out DIR` (two words, as the suite
        # runner passes it) counts as one: the ids then start with the
        # tree's own directory name. The line tracer's run has no such
        # argument.
        test = ev.header["test-id"]
        if test.startswith(TREE_PREFIX):
            test = test[len(TREE_PREFIX):]
        names, lines = found.setdefault(test, (set(), set()))
        for frame in ev.functions:
            names.add(evidence_scope(frame))
            lines.add(("f", frame))
        for module, frame in ev.import_functions:
            names.add(evidence_scope(frame))
            lines.add(("i", module, frame))
        lines.update(("m", p) for p in ev.imports)
        lines.update(("r", p) for p in ev.reads)
    return found


def size_of(out):
    files = glob.glob(os.path.join(out, "**", "*.stacks"), recursive=True)
    return sum(os.path.getsize(p) for p in files), len(files)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tree", default=os.path.join(ROOT, "test", "workloads", "minitron"))
    parser.add_argument("--paths", nargs="*", default=["tests/unit"])
    parser.add_argument("--load", type=int, default=2, help="busy processes beside the loaded run")
    parser.add_argument("--pairs", type=int, default=0, help="plain vs collect pairs for overhead")
    parser.add_argument("--keep", help="keep the outputs in this directory")
    parser.add_argument("--peer-env", metavar="KEY=VALUE", action="append", default=[],
                        help="with --pairs, also collect with this environment setting in the "
                        "same interleaved rounds (repeatable; e.g. %s=eval-frame: the CPython "
                        "3.11 hook, FASTCI_TRACE_RECORDER=off: no recorder)" % ENV_MECHANISM)
    parser.add_argument("--overhead-only", action="store_true",
                        help="only the --pairs measurement")
    parser.add_argument("--analyze", action="store_true",
                        help="only analyze the outputs a --keep run left there")
    args = parser.parse_args()

    work = args.keep or tempfile.mkdtemp(prefix="evidence-recall-")
    tree = os.path.join(work, "tree")
    if os.path.exists(tree) and not args.analyze:
        shutil.rmtree(tree)
    if not args.analyze:
        shutil.copytree(args.tree, tree, ignore=shutil.ignore_patterns("__pycache__", "history"))
    # The copy is the repository (not a git checkout: the root is the
    # suite's working directory), so paths are relative to it on both sides.
    scopes = Scopes(tree)
    print("suite: %s %s (copied to %s); load average before %.2f %.2f %.2f on %d CPUs" % (
        args.tree, " ".join(args.paths), tree, *os.getloadavg(), os.cpu_count()), flush=True)

    quiet, loaded, lines = (os.path.join(work, n) for n in ("quiet", "loaded", "linetrace"))
    load, t_quiet, t_loaded, t_trace = 0.0, 0.0, 0.0, 0.0
    if not args.overhead_only:
        if not args.analyze:
            load, t_quiet, t_loaded, t_trace = run_all(args, tree, quiet, loaded, lines)
        report(args, scopes, quiet, loaded, lines, load, t_quiet, t_loaded, t_trace)
    if args.pairs:
        overhead(args, work, tree)
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)


def run_all(args, tree, quiet, loaded, lines):
    for d in (quiet, loaded, lines):
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
    t_quiet = run_suite(tree, args.paths, out=quiet)
    busy = [multiprocessing.Process(target=_busy, args=(time.time() + 3600,))
            for _ in range(args.load)]
    for p in busy:
        p.start()
    try:
        load = os.getloadavg()[0]
        t_loaded = run_suite(tree, args.paths, out=loaded)
        load = max(load, os.getloadavg()[0])
    finally:
        for p in busy:
            p.terminate()
            p.join()
    t_trace = run_suite(tree, args.paths, linetrace=lines)
    return load, t_quiet, t_loaded, t_trace


def report(args, scopes, quiet, loaded, lines, load, t_quiet, t_loaded, t_trace):
    truth = truth_functions(lines, scopes)
    ev_quiet = evidence_of(quiet, scopes)
    ev_loaded = evidence_of(loaded, scopes)
    tests = sorted(t for t in truth if not t.startswith("<"))
    total = hit = 0
    missing = []
    for test in tests:
        expected = truth[test]
        got = ev_quiet.get(test, (set(), set()))[0]
        total += len(expected)
        hit += len(expected & got)
        missing += [(test, m) for m in sorted(expected - got)]
    print("recall: %d of %d functions executed by %d tests are in the evidence (%.2f%%); "
          "tests with a miss: %d" % (hit, total, len(tests), 100.0 * hit / max(total, 1),
                                     len({t for t, _ in missing})))
    for test, miss in missing[:15]:
        print("  missed %s in %s" % (miss, test))
    same = [t for t in tests if ev_quiet.get(t, (0, set()))[1] == ev_loaded.get(t, (0, set()))[1]]
    print("determinism: %d of %d tests have identical entity lines quiet vs loaded "
          "(%d busy processes, load average up to %.2f); suite %.1fs quiet, %.1fs loaded, "
          "%.1fs under the line tracer" % (len(same), len(tests), args.load, load,
                                           t_quiet, t_loaded, t_trace))
    for test in [t for t in tests if t not in same][:10]:
        a, b = ev_quiet.get(test, (0, set()))[1], ev_loaded.get(test, (0, set()))[1]
        print("  differs: %s: only quiet %s, only loaded %s" % (
            test, sorted(a - b)[:3], sorted(b - a)[:3]))
    size, files = size_of(quiet)
    n = max(len(ev_quiet) - ("<collection>" in ev_quiet), 1)
    print("size: %.2f MB in %d files for %d tests = %.2f MB per 1,300 tests" % (
        size / 1e6, files, n, size / 1e6 * 1300 / n))



def _collect_with(setting):
    """A collect run with one more environment setting, "KEY=VALUE" (None: as is)."""
    def run(tree, paths, out):
        if setting is None:
            return run_suite(tree, paths, out=out)
        key, value = setting.split("=", 1)
        saved = os.environ.get(key)
        os.environ[key] = value
        try:
            return run_suite(tree, paths, out=out)
        finally:
            if saved is None:
                os.environ.pop(key)
            else:
                os.environ[key] = saved
    return run


def _median_line(values):
    values = sorted(values)
    return "median %+.1f%% (min %+.1f%%, max %+.1f%%)" % (
        statistics.median(values), values[0], values[-1])


def overhead(args, work, tree):
    """Plain suite against collect runs, interleaved (ABBA...): as configured
    and, for each --peer-env KEY=VALUE, with that setting too (ABCCBA...)."""
    kinds = ["collect"] + ["collect " + setting for setting in args.peer_env]
    runners = {"collect": _collect_with(None)}
    for setting in args.peer_env:
        runners["collect " + setting] = _collect_with(setting)
    wall = {k: [] for k in ["plain"] + kinds}
    cpu = {k: [] for k in ["plain"] + kinds}
    # Bytecode caches as an installed package has them, on both sides: a
    # process that compiles fastci.trace (or the suite) from source on every
    # start (PYTHONDONTWRITEBYTECODE, a read-only tree) measures the
    # compiler, not the collection. One unmeasured run of each kind fills
    # the cache first.
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = os.path.join(work, "pycache")
    sys.dont_write_bytecode = False
    for kind in ["plain"] + kinds:
        out = os.path.join(work, "warm-up")
        shutil.rmtree(out, ignore_errors=True)
        if kind == "plain":
            run_suite(tree, args.paths)
        else:
            runners[kind](tree, args.paths, out)
    for i in range(args.pairs):
        order = ["plain"] + kinds
        for kind in (order if i % 2 == 0 else order[::-1]):
            if kind == "plain":
                wall[kind].append(run_suite(tree, args.paths))
            else:
                out = os.path.join(work, "pair-%d-%d" % (i, kinds.index(kind)))
                shutil.rmtree(out, ignore_errors=True)
                wall[kind].append(runners[kind](tree, args.paths, out))
            cpu[kind].append(CPU_SECONDS[-1])
    print("overhead: %d interleaved rounds after one warm-up run of each kind (bytecode "
          "cached under PYTHONPYCACHEPREFIX); load average now %.2f" % (
              args.pairs, os.getloadavg()[0]))
    for kind in ["plain"] + kinds:
        line = "  %-26s wall median %.2fs (%.2f..%.2f), CPU median %.2fs (%.2f..%.2f)" % (
            kind + ":", statistics.median(wall[kind]), min(wall[kind]), max(wall[kind]),
            statistics.median(cpu[kind]), min(cpu[kind]), max(cpu[kind]))
        if kind != "plain":
            line += "; per-round vs plain: wall %s, CPU %s" % (
                _median_line((t / p - 1) * 100 for t, p in zip(wall[kind], wall["plain"])),
                _median_line((t / p - 1) * 100 for t, p in zip(cpu[kind], cpu["plain"])))
        print(line)


if __name__ == "__main__":
    main()
