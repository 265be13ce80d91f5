"""Command line: `python -m fastci.trace run ...` and `python -m fastci.trace show ...`.

`run` traces a non-pytest CI job: it exports the sampling settings and the
test id to the environment, puts the start-up hook on PYTHONPATH and then
exec()s the command, so every Python process the command starts samples
itself, and the command's exit status and signals are exactly its own.
`show` validates evidence files and prints a short summary of each.
"""

from __future__ import annotations

import argparse
import os
import sys

from . import config as _config
from .evidence import EvidenceError, read_evidence


def _run(args, parser):
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("run: missing command after --")
    environ = dict(os.environ)
    environ[_config.ENV_OUT] = args.out
    if args.rate is not None:
        environ[_config.ENV_RATE] = args.rate
    if args.flush is not None:
        environ[_config.ENV_FLUSH] = args.flush
    if args.calls is not None:
        environ[_config.ENV_CALLS] = args.calls
    try:
        cfg = _config.from_env(environ, os.getcwd())
    except _config.ConfigError as e:
        parser.error("run: %s" % e)
    _config.export(cfg, environ)
    environ[_config.ENV_TEST_ID] = args.test_id
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execvpe(command[0], command, environ)
    except OSError as e:
        # The shell's conventions: 127 not found, 126 found but not runnable.
        sys.stderr.write("fastci_trace: run: %s: %s\n" % (command[0], e.strerror))
        return 127 if isinstance(e, FileNotFoundError) else 126


def _show(args, parser):
    status = 0
    for path in args.files:
        try:
            header, stacks = read_evidence(path)
        except (EvidenceError, OSError) as e:
            sys.stderr.write("%s\n" % e)
            status = 1
            continue
        print("%s: test-id=%s pid=%s rank=%s samples=%s stacks=%d complete=%s" % (
            path, header.get("test-id"), header.get("pid"), header.get("rank"),
            header.get("samples"), len(stacks), header.get("complete")))
    return status


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the process exit status."""
    parser = argparse.ArgumentParser(prog="python -m fastci.trace")
    sub = parser.add_subparsers(dest="action")
    sub.required = True
    run = sub.add_parser("run", help="run a command, sampling every Python process it starts")
    run.add_argument("--test-id", required=True, help="id the samples are attributed to")
    run.add_argument("--out", required=True, metavar="DIR", help="evidence output directory")
    run.add_argument("--rate", metavar="HZ", help="sampling rate (default %g)" % _config.DEFAULT_RATE)
    run.add_argument("--flush", metavar="SECONDS",
                     help="periodic flush interval (default %g)" % _config.DEFAULT_FLUSH)
    run.add_argument("--calls", metavar="SECONDS",
                     help="CPU seconds per process during which calls are traced "
                     "(default %g; 0: off)" % _config.DEFAULT_CALLS)
    run.add_argument("command", nargs=argparse.REMAINDER, help="-- CMD ARGS...")
    run.set_defaults(func=_run)
    show = sub.add_parser("show", help="validate evidence files and summarize them")
    show.add_argument("files", nargs="+")
    show.set_defaults(func=_show)
    args = parser.parse_args(argv)
    if args.action == "run" and not args.test_id:
        parser.error("run: --test-id must not be empty")
    return args.func(args, parser)


if __name__ == "__main__":
    sys.exit(main())
