"""pytest plugin: the `worker_id` fixture of pytest-xdist, for suites run
without it (Debian's pytest has no xdist). pytest-xdist names the process
that runs tests without `-n` "master"; pytorch/ignite's conftest derives
ranks and scratch directories from it."""

import pytest


@pytest.fixture(scope="session")
def worker_id():
    return "master"
