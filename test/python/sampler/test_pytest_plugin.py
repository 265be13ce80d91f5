"""pytest plugin: setup/call/teardown attribution, children, outcome neutrality."""

import os
import re

import pytest

from conftest import by_function, clean_env, load_out, run_inner_pytest, write

ATTRIBUTION_TESTS = """
    import time
    import pytest

    def _spin(seconds):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            pass

    def fixture_setup_work():
        _spin(0.4)

    def call_body_work():
        _spin(0.4)

    def fixture_teardown_work():
        _spin(0.4)

    def other_test_work():
        _spin(0.4)

    @pytest.fixture
    def heavy():
        fixture_setup_work()
        yield
        fixture_teardown_work()

    def test_one(heavy):
        call_body_work()

    @pytest.mark.parametrize("arg", ["a b", "x;y"])
    def test_two(arg):
        other_test_work()
"""


def test_setup_call_teardown_attributed_to_node_id(tmp_path):
    write(tmp_path / "test_attr.py", ATTRIBUTION_TESTS)
    out = tmp_path / "out"
    proc = run_inner_pytest(tmp_path, "--fastci-trace-out", str(out), "--fastci-trace-rate", "100")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    printed = set(re.findall(r"^(\S+::\S+(?:\[[^\]]*\])?) PASSED", proc.stdout, re.M))
    assert printed == {"test_attr.py::test_one", "test_attr.py::test_two[a b]",
                       "test_attr.py::test_two[x;y]"}, proc.stdout
    evidences = load_out(out)
    assert {h["test-id"] for _, h, _ in evidences} == printed
    for phase in ("fixture_setup_work", "call_body_work", "fixture_teardown_work"):
        found = by_function(evidences, phase)
        assert list(found) == ["test_attr.py::test_one"], (phase, found)
        assert found["test_attr.py::test_one"] >= 10, (phase, found)
    other = by_function(evidences, "other_test_work")
    assert set(other) == {"test_attr.py::test_two[a b]", "test_attr.py::test_two[x;y]"}
    for _, header, _ in evidences:
        assert header["complete"] == "true"
        assert header["pid"] != str(os.getpid())


def test_env_var_enables_plugin_and_test_id_scoped_to_item(tmp_path):
    write(tmp_path / "test_env.py", """
        import os

        def test_inside():
            assert os.environ["FASTCI_TRACE_TEST_ID"] == "test_env.py::test_inside"

        def test_zz_after():
            assert os.environ["FASTCI_TRACE_TEST_ID"] == "test_env.py::test_zz_after"
    """)
    write(tmp_path / "conftest.py", """
        import os

        def pytest_sessionfinish(session):
            # between/after items no test id may leak to children
            assert "FASTCI_TRACE_TEST_ID" not in os.environ
    """)
    out = tmp_path / "envout"
    proc = run_inner_pytest(tmp_path, env=clean_env(FASTCI_TRACE_OUT=str(out)))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert len(load_out(out)) == 2


def test_subprocess_child_attributed_with_rank_from_env(tmp_path, spin_module):
    write(tmp_path / "child.py", """
        import spinlib

        def child_main():
            spinlib.spin(0.5)

        child_main()
    """)
    write(tmp_path / "test_sub.py", """
        import os, subprocess, sys

        def test_runs_child():
            env = dict(os.environ, RANK="3", LOCAL_RANK="1")
            subprocess.run([sys.executable, "child.py"], check=True, env=env)
    """)
    out = tmp_path / "out"
    proc = run_inner_pytest(tmp_path, "--fastci-trace-out", str(out))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    evidences = load_out(out)
    children = [(h, s) for _, h, s in evidences if by_function([(None, h, s)], "child_main")]
    assert len(children) == 1, evidences
    header, stacks = children[0]
    assert header["test-id"] == "test_sub.py::test_runs_child"
    assert (header["rank"], header["local-rank"]) == ("3", "1")
    # Paths under the root are relative; the child's frames name its file.
    assert any(f.path == "child.py" and f.qualname == "child_main"
               for frames in stacks for f in frames)
    assert header["root"] == str(tmp_path)


POOL_TESTS = """
    import multiprocessing
    import pytest
    import spinlib

    def pool_task(i):
        spinlib.spin(0.3)
        return i

    @pytest.mark.parametrize("method,ending", [("fork", "close"), ("fork", "terminate"),
                                               ("spawn", "close")])
    def test_pool(method, ending):
        pool = multiprocessing.get_context(method).Pool(2)
        assert sorted(pool.map(pool_task, range(4), chunksize=1)) == [0, 1, 2, 3]
        if ending == "close":
            pool.close()
        else:
            pool.terminate()
        pool.join()
"""


def test_multiprocessing_pool_workers_attributed(tmp_path, spin_module):
    write(tmp_path / "test_pool.py", POOL_TESTS)
    out = tmp_path / "out"
    proc = run_inner_pytest(tmp_path, "--fastci-trace-out", str(out), "--fastci-trace-rate", "100")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    evidences = load_out(out)
    for test_id in ("test_pool.py::test_pool[fork-close]", "test_pool.py::test_pool[fork-terminate]",
                    "test_pool.py::test_pool[spawn-close]"):
        files = [(h, s) for _, h, s in evidences if h["test-id"] == test_id]
        # the pytest process plus one file per pool worker (spawn also
        # starts multiprocessing's resource tracker, itself a Python child)
        pids = {h["pid"] for h, _ in files}
        assert len(pids) >= 3, (test_id, pids)
        assert all(h["complete"] == "true" for h, _ in files), test_id
        workers_with_work = [h for h, s in files
                             if by_function([(None, h, s)], "pool_task")]
        assert len(workers_with_work) >= 1, test_id
        assert sum(by_function([(None, h, s)], "pool_task").get(test_id, 0)
                   for h, s in files) >= 40, test_id


def test_sampler_write_errors_do_not_change_outcome(tmp_path):
    write(tmp_path / "test_mixed.py", """
        def test_ok():
            pass

        def test_bad():
            assert False
    """)
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the output directory should be")
    plain = run_inner_pytest(tmp_path, "-p", "no:fastci.trace.pytest_plugin")
    traced = run_inner_pytest(tmp_path, "--fastci-trace-out", str(blocker / "out"))
    assert plain.returncode == traced.returncode == 1
    summary = re.compile(r"1 failed, 1 passed")
    assert summary.search(plain.stdout) and summary.search(traced.stdout), traced.stdout
    assert traced.stderr.count("fastci_trace: cannot write") == 1, traced.stderr


def test_sampler_thread_crash_does_not_change_outcome(tmp_path):
    write(tmp_path / "test_crash.py", """
        import time

        from fastci.trace import process

        def test_breaks_sampler():
            process.active()._sinks[-1].ticks = "broken"  # the next capture cannot count
            time.sleep(0.2)  # let the sampler tick and fail

        def test_still_runs():
            time.sleep(0.1)
    """)
    out = tmp_path / "out"
    proc = run_inner_pytest(tmp_path, "--fastci-trace-out", str(out))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "2 passed" in proc.stdout
    assert proc.stderr.count("fastci_trace: sampler stopped: TypeError: can only concatenate str "
                             '(not "int") to str') == 1, proc.stderr


def test_bad_rate_is_a_usage_error(tmp_path):
    write(tmp_path / "test_x.py", "def test_x():\n    pass\n")
    proc = run_inner_pytest(tmp_path, "--fastci-trace-out", str(tmp_path / "o"),
                            "--fastci-trace-rate", "fast")
    assert proc.returncode == 4
    assert "FASTCI_TRACE_RATE: 'fast' is not a rate in Hz" in proc.stderr


THREAD_PROBE = """
    import os
    import signal

    from fastci.trace import process

    def state():
        return (process.active()._thread is not None, len(os.listdir("/proc/self/task")),
                signal.getsignal(signal.SIGTERM) is signal.SIG_DFL)

    def pytest_collection_finish(session):
        print("collected", state())

    def pytest_sessionfinish(session):
        print("finished", state())
"""


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="counts threads in /proc")
def test_pytest_process_starts_its_thread_with_the_first_test(tmp_path):
    """Collection runs without the sampling thread, and without the SIGTERM
    handler its watch needs (process.start); the first test starts both.
    A run that collects only never starts them."""
    write(tmp_path / "conftest.py", THREAD_PROBE)
    write(tmp_path / "test_probe.py", "def test_first():\n    pass\n")
    proc = run_inner_pytest(tmp_path, "--fastci-trace-out", str(tmp_path / "o"), "-s")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "collected (False, 1, True)" in proc.stdout, proc.stdout
    assert "finished (True, 2, False)" in proc.stdout, proc.stdout
    assert load_out(tmp_path / "o")  # the test's evidence
    collected = run_inner_pytest(tmp_path, "--fastci-trace-out", str(tmp_path / "c"),
                                 "--collect-only", "-s")
    assert collected.returncode == 0, collected.stdout + collected.stderr
    assert "finished (False, 1, True)" in collected.stdout, collected.stdout
    assert (tmp_path / "c" / "_collection").is_dir()  # collection is recorded all the same
