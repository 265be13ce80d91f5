"""pytest plugin: attribute samples from setup, call and teardown to each item's node id.

Installed with the `fastci` package, pytest loads it through its `pytest11`
entry point; from a source tree, `-p fastci.trace.pytest_plugin`. It records
only when asked: `--fastci-collect DIR` (alias `--fastci-trace-out`) or
FASTCI_TRACE_OUT in the environment; without an output directory the plugin
does nothing. For the duration of each item (pytest_runtest_protocol
wraps setup, call and teardown) samples go to `item.nodeid` and
FASTCI_TRACE_TEST_ID is set in os.environ, so every child process started
by the item (subprocess, multiprocessing, torch.multiprocessing) inherits
the item's id and samples itself through the sitecustomize hook.
"""

from __future__ import annotations

import os
import sys

import pytest

from . import config as _config
from . import process


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("fastci_trace", "FastCI runtime evidence sampling")
    group.addoption("--fastci-collect", "--fastci-trace-out", metavar="DIR",
                    dest="fastci_trace_out", default=None,
                    help="write per-test stack samples under DIR (env %s)" % _config.ENV_OUT)
    group.addoption("--fastci-trace-rate", metavar="HZ", default=None,
                    help="sampling rate (env %s, default %g)"
                    % (_config.ENV_RATE, _config.DEFAULT_RATE))
    group.addoption("--fastci-trace-flush", metavar="SECONDS", default=None,
                    help="periodic flush interval (env %s, default %g)"
                    % (_config.ENV_FLUSH, _config.DEFAULT_FLUSH))
    group.addoption("--fastci-trace-calls", metavar="SECONDS", default=None,
                    help="CPU seconds per test and process during which calls are traced "
                    "for exact function-level evidence; 0 turns it off (env %s, default %g)"
                    % (_config.ENV_CALLS, _config.DEFAULT_CALLS))


def pytest_configure(config: pytest.Config) -> None:
    environ = dict(os.environ)
    for option, key in (("--fastci-trace-out", _config.ENV_OUT),
                        ("--fastci-trace-rate", _config.ENV_RATE),
                        ("--fastci-trace-flush", _config.ENV_FLUSH),
                        ("--fastci-trace-calls", _config.ENV_CALLS)):
        value = config.getoption(option)
        if value is not None:
            environ[key] = value
    try:
        cfg = _config.from_env(environ, str(config.invocation_params.dir))
    except _config.ConfigError as e:
        raise pytest.UsageError("fastci_trace: %s" % e) from None
    if cfg is None:
        return
    started_here = process.active() is None
    _config.export(cfg, os.environ)
    sampler = process.start(cfg)
    tracer = _ItemTracer(config, sampler, started_here)
    config.pluginmanager.register(tracer, "fastci_trace_tracer")


class _ItemTracer:
    """Switches attribution to each item's node id while the item runs."""

    def __init__(self, config, sampler, owns_sampler):
        self._config = config
        self._sampler = sampler
        self._owns_sampler = owns_sampler
        self._reports = []
        sampler.report = self._reports.append  # from any thread; shown by _show_reports

    def _show_reports(self):
        """Print queued sampler errors on the real stderr, outside pytest's capture."""
        if not self._reports:
            return
        messages, self._reports[:] = list(self._reports), []
        capture = self._config.pluginmanager.getplugin("capturemanager")
        if capture is not None:
            with capture.global_and_fixture_disabled():
                _write_stderr(messages)
        else:
            _write_stderr(messages)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        previous = os.environ.get(_config.ENV_TEST_ID)
        os.environ[_config.ENV_TEST_ID] = item.nodeid
        self._sampler.begin(item.nodeid)
        try:
            yield
        finally:
            self._sampler.end()
            if previous is None:
                os.environ.pop(_config.ENV_TEST_ID, None)
            else:
                os.environ[_config.ENV_TEST_ID] = previous
            self._show_reports()

    def pytest_unconfigure(self, config):
        # Which distributions provide the packages the run imported: for
        # selection on changed dependency pins (`@p`, `@q` lines).
        self._sampler.describe_distributions()
        # A sampler started by the hook (pytest itself under `run`) keeps
        # attributing the rest of the process to the wrapper's id until exit.
        if self._owns_sampler:
            process.stop()
        self._show_reports()


def _write_stderr(messages):
    sys.stderr.write("".join(m + "\n" for m in messages))
    sys.stderr.flush()
