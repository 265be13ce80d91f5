"""Start-up hook of the replay's line tracer (see fastci/replay/linetrace.py).

The linetrace pytest plugin puts this directory on PYTHONPATH so that child
interpreters of a traced test (spawned ranks, subprocesses, launchers) trace
themselves too. Other directories may shadow `sitecustomize` as well
(fastci.trace's hook, which runs the next one it finds, and Debian's): we run
the next one that has not run yet, so each runs exactly once whatever the
order.
"""


def _start():
    import os
    import sys
    if not os.environ.get("FASTCI_LINETRACE_TEST_ID") or hasattr(sys, "_fastci_linetrace_started"):
        return
    sys._fastci_linetrace_started = True
    try:
        # python/ (the directory holding the fastci package), three levels up.
        here = os.path.dirname(os.path.abspath(__file__))
        sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(here))))
        try:
            from fastci.replay import linetrace
        finally:
            sys.path.pop(0)
        linetrace.start_child_from_env()
    except Exception as e:
        sys.stderr.write("fastci.replay.linetrace: cannot start tracing: %s: %s\n" % (type(e).__name__, e))


def _run_next_sitecustomize():
    import importlib.machinery
    import importlib.util
    import os
    import sys
    # Hooks that chain without this bookkeeping may call us again: remember
    # every directory already run in this process and never revisit one.
    seen = sys.__dict__.setdefault("_eval_sitecustomize_seen", set())
    seen.add(os.path.dirname(os.path.abspath(__file__)))
    current = sys.modules.get("sitecustomize")
    if current is not None and getattr(current, "__file__", None):
        seen.add(os.path.dirname(os.path.abspath(current.__file__)))
    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) not in seen]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    seen.add(os.path.dirname(os.path.abspath(spec.origin)))
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as e:
        sys.stderr.write("Error in sitecustomize (%s): %s: %s\n" % (spec.origin, type(e).__name__, e))


_start()
_run_next_sitecustomize()
