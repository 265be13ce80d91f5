"""The sampler's life cycle costs a process nothing it does not need to.

* stop() does not wait out the sampling thread's sleep (up to an interval
  per process exit), and a thread it left asleep never samples again, even
  when the sampler is started again at once;
* the modules a sink imported are found from a mark on sys.modules, without
  touching the entries before it (a fork child would copy every page that
  holds one), and a mark that left sys.modules over-reports, never omits.
"""

import sys
import threading
import time

from conftest import PACKAGE_ROOT  # noqa: F401  (puts the package on sys.path)

from fastci.trace import config as trace_config
from fastci.trace.sampler import Sampler, modules_mark, modules_since

def _sampler(tmp_path, rate):
    env = {trace_config.ENV_OUT: str(tmp_path / "out"), trace_config.ENV_RATE: str(rate),
           trace_config.ENV_ROOT: str(tmp_path), trace_config.ENV_REVISION: "r1",
           trace_config.ENV_CALLS: "0"}
    return Sampler(trace_config.from_env(env, str(tmp_path)), cwd=str(tmp_path))


def _wait_asleep(sampler):
    deadline = time.monotonic() + 10
    while not sampler._asleep:
        assert time.monotonic() < deadline, "the sampling thread never went to sleep"
        time.sleep(0.01)


def test_stop_does_not_join_a_sleeping_thread_and_restart_samples_once(tmp_path):
    sampler = _sampler(tmp_path, rate=0.5)  # a 2 s interval, slept in 0.1 s slices
    threads_before = threading.enumerate()
    sampler.begin("t")
    sampler.start()
    _wait_asleep(sampler)
    old = sampler._thread
    # A `_thread` thread: invisible to the program's threading.enumerate().
    assert threading.enumerate() == threads_before
    sampler.stop()
    # Not joined: the old thread is still in its sleep when stop() returns.
    assert old.is_alive()
    sampler.start()
    sampler.begin("t2")
    # The old thread wakes within a slice and returns; only the new one samples.
    old.join(timeout=5)
    assert not old.is_alive()
    assert sampler._thread.is_alive() and sampler._thread.ident != old.ident
    sampler.end()
    sampler.stop()
    assert (tmp_path / "out").is_dir()


def test_modules_since_a_mark_are_the_later_imports(tmp_path, monkeypatch):
    (tmp_path / "fastci_mark_a.py").write_text("A = 1\n")
    (tmp_path / "fastci_mark_b.py").write_text("B = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import fastci_mark_a  # noqa: F401
    mark = modules_mark()
    assert mark[0] == "fastci_mark_a"
    assert modules_since(mark) == []
    import fastci_mark_b  # noqa: F401
    assert [name for name, _ in modules_since(mark)] == ["fastci_mark_b"]
    # A module re-imported after the mark counts again (it was imported since).
    del sys.modules["fastci_mark_a"]
    import fastci_mark_a  # noqa: F401,F811
    names = [name for name, _ in modules_since(mark)]
    # The mark's entry was replaced: everything counts, nothing is omitted.
    assert "fastci_mark_b" in names and "fastci_mark_a" in names
    assert len(names) == len(sys.modules)
    sys.modules.pop("fastci_mark_a", None)
    sys.modules.pop("fastci_mark_b", None)
