"""FastCI's evaluation harness: replays a merge-request history and scores
CI strategies (run-all, path filters, static RTS, FastCI ablations) on it.
Entry points: `python -m eval` (utils/ on sys.path) and utils/demo.py."""
