"""FastCI's evaluation harness: replays a merge-request history and scores
CI strategies (run-all, path filters, static RTS, FastCI ablations) on it.
Entry points: `python -m eval` (utils/ on sys.path) and utils/demo.py."""

import os as _os
import sys as _sys

# The `fastci` package of the same checkout (its line tracer, fastci.replay.linetrace).
_PACKAGE_ROOT = _os.path.join(_os.path.dirname(_os.path.dirname(_os.path.dirname(_os.path.abspath(__file__)))), "python")
if _PACKAGE_ROOT not in _sys.path:
    _sys.path.insert(0, _PACKAGE_ROOT)
