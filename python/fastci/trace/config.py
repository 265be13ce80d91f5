"""Sampler configuration: environment variables, validation, repository discovery.

Configuration travels to child interpreters through environment variables,
so everything a child needs is computed once in the launching process (the
`run` wrapper or the pytest plugin) and written back to the environment:
the output directory as an absolute path, the rate, the flush interval, the
repository root and git revision (so children never run git), and the hook
directory prepended to PYTHONPATH so each child starts sampling at startup.
"""

import os
from collections import namedtuple

ENV_TEST_ID = "FASTCI_TRACE_TEST_ID"
ENV_OUT = "FASTCI_TRACE_OUT"
ENV_RATE = "FASTCI_TRACE_RATE"
ENV_FLUSH = "FASTCI_TRACE_FLUSH"
ENV_REVISION = "FASTCI_TRACE_REVISION"
ENV_ROOT = "FASTCI_TRACE_ROOT"
ENV_CALLS = "FASTCI_TRACE_CALLS"

DEFAULT_RATE = 50.0
DEFAULT_FLUSH = 5.0
# CPU seconds per test and process during which calls are traced (calls.py);
# 0 turns the call burst off.
DEFAULT_CALLS = 0.2
MAX_RATE = 1000.0  # beyond this the sampler itself dominates the process

HOOK_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_hook")

Config = namedtuple("Config", "out rate flush root revision calls")
Config.__doc__ = ("Resolved sampler settings; `revision` is UNKNOWN_REVISION when unknown, "
                  "`calls` the call-burst budget in CPU seconds (0: off).")
UNKNOWN_REVISION = "unknown"


class ConfigError(ValueError):
    """A setting has an invalid value; the message names the setting."""


def parse_rate(source, text):
    """Validate a sampling rate in Hz given as text; `source` names the setting."""
    rate = _parse_positive(source, text, "a rate in Hz")
    if rate > MAX_RATE:
        raise ConfigError("%s: rate %g Hz exceeds the maximum of %g Hz" % (source, rate, MAX_RATE))
    return rate


def parse_flush(source, text):
    """Validate a flush interval in seconds given as text."""
    return _parse_positive(source, text, "an interval in seconds")


def parse_calls(source, text):
    """Validate a call-burst budget in CPU seconds given as text (0 turns it off)."""
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise ConfigError("%s: %r is not a budget in CPU seconds" % (source, text)) from None
    if not value >= 0 or value == float("inf"):
        raise ConfigError("%s: %r must be a non-negative finite number" % (source, text))
    return value


def _parse_positive(source, text, what):
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise ConfigError("%s: %r is not %s" % (source, text, what)) from None
    if not value > 0 or value == float("inf"):
        raise ConfigError("%s: %r must be a positive finite number" % (source, text))
    return value


def discover_repository(cwd, environ):
    """Return (root, revision) from the environment, else git, else (cwd, UNKNOWN_REVISION).

    git runs at most once, in the launching process; children inherit the
    answer through ENV_ROOT/ENV_REVISION (export() always sets both).
    """
    root = environ.get(ENV_ROOT)
    revision = environ.get(ENV_REVISION)
    if root and revision:
        return root, revision
    import subprocess  # only launchers get here; keep child start-up lean
    git_root, git_revision = None, None
    try:
        out = subprocess.run(["git", "rev-parse", "--show-toplevel", "HEAD"], cwd=cwd,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             universal_newlines=True, timeout=10)
        lines = out.stdout.split("\n")
        if len(lines) >= 2 and lines[0]:
            git_root = lines[0]
            # A repository without commits prints the literal "HEAD".
            if len(lines[1]) == 40:
                git_revision = lines[1]
    except (OSError, subprocess.SubprocessError):
        pass
    return (root or git_root or cwd), (revision or git_revision or UNKNOWN_REVISION)


def from_env(environ, cwd):
    """Config from the environment, or None if no output directory is set.

    Raises ConfigError for malformed values.
    """
    out = environ.get(ENV_OUT)
    if not out:
        return None
    rate = parse_rate(ENV_RATE, environ.get(ENV_RATE, DEFAULT_RATE))
    flush = parse_flush(ENV_FLUSH, environ.get(ENV_FLUSH, DEFAULT_FLUSH))
    calls = parse_calls(ENV_CALLS, environ.get(ENV_CALLS, DEFAULT_CALLS))
    root, revision = discover_repository(cwd, environ)
    return Config(os.path.abspath(os.path.join(cwd, out)), rate, flush, root, revision, calls)


def export(config, environ):
    """Write `config` into `environ` so child interpreters sample with it.

    Prepends HOOK_DIR to PYTHONPATH (once). The test id is set separately,
    because it changes per pytest item.
    """
    environ[ENV_OUT] = config.out
    environ[ENV_RATE] = "%r" % config.rate
    environ[ENV_FLUSH] = "%r" % config.flush
    environ[ENV_CALLS] = "%r" % config.calls
    environ[ENV_ROOT] = config.root
    environ[ENV_REVISION] = config.revision
    from .recorder import ENV_RECORDER, find_extension
    extension = None if environ.get(ENV_RECORDER) == "off" else find_extension()
    if extension:
        environ[ENV_RECORDER] = extension  # children load the same build
    paths = [p for p in environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if HOOK_DIR not in paths:
        environ["PYTHONPATH"] = os.pathsep.join([HOOK_DIR] + paths)
