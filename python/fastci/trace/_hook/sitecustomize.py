"""FastCI start-up hook: begin sampling in every child Python interpreter.

The `run` wrapper and the pytest plugin put this directory first on
PYTHONPATH, so any Python process they start (subprocess children,
multiprocessing spawn workers, torchrun ranks) imports this module at
start-up. If FASTCI_TRACE_TEST_ID and FASTCI_TRACE_OUT are set it starts the
sampler, loading the fastci package from above this file so the child needs no
other path set-up. Because a directory earlier on sys.path shadows any
other `sitecustomize` (Debian ships one), we then run the next one found.
Nothing here may break the child: failures are one line on stderr.
"""


def _start_fastci_trace():
    import os
    import sys
    if not (os.environ.get("FASTCI_TRACE_TEST_ID") and os.environ.get("FASTCI_TRACE_OUT")):
        return
    try:
        try:
            import fastci.trace  # noqa: F401  (installed, or already on sys.path)
        except ImportError:
            # Started by a checkout: the package root is three levels above
            # this file (python/fastci/trace/_hook). Appended, not prepended,
            # so it never shadows the child's own modules.
            sys.path.append(os.path.dirname(os.path.dirname(os.path.dirname(
                os.path.dirname(os.path.abspath(__file__))))))
        from fastci.trace import process
        process.start_from_env()
    except Exception as e:
        sys.stderr.write("fastci_trace: cannot start sampling: %s: %s\n" % (type(e).__name__, e))


def _run_shadowed_sitecustomize():
    import importlib.machinery
    import importlib.util
    import os
    import sys
    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as e:  # the interpreter would print and continue too
        sys.stderr.write("Error in sitecustomize (%s); set PYTHONVERBOSE for traceback:\n"
                         "%s: %s\n" % (spec.origin, type(e).__name__, e))


_start_fastci_trace()
_run_shadowed_sitecustomize()
