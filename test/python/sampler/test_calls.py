"""The call burst, the fallback when no function recorder can run: its budget, its processes.

Every run here turns the recorder off (FASTCI_TRACE_RECORDER=off), which is
what a process without the extension (CPython < 3.12) sees.
"""

import os
import subprocess
import sys

import conftest
from conftest import PYTHON, PACKAGE_ROOT, functions_in, load_calls, load_out, write


def clean_env(**extra):
    return conftest.clean_env(FASTCI_TRACE_RECORDER="off", **extra)


def run_inner_pytest(directory, *args, env=None, **kwargs):
    return conftest.run_inner_pytest(directory, *args, env=env or clean_env(), **kwargs)

SHORT_TESTS = """
    import functools
    import threading

    def deco(f):
        @functools.wraps(f)
        def wrapper(*args):
            return f(*args)
        return wrapper

    def first(x):
        return second(x) + 1

    @deco
    def second(x):
        return third(x) * 2

    def third(x):
        return x - 1

    def only_in_thread():
        return 7

    def test_millisecond():
        assert first(3) == 5

    def test_thread():
        t = threading.Thread(target=only_in_thread)
        t.start()
        t.join()
"""


def test_millisecond_test_gets_every_function_with_its_callers(tmp_path):
    write(tmp_path / "test_short.py", SHORT_TESTS)
    out = tmp_path / "out"
    proc = run_inner_pytest(tmp_path, "--fastci-trace-out", str(out))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    calls = load_calls(out)
    found = functions_in(calls)
    test_id = "test_short.py::test_millisecond"
    assert {"first", "second", "third"} <= found[test_id], found
    assert "only_in_thread" not in found[test_id]
    # threads started during the test are traced too
    assert "only_in_thread" in found["test_short.py::test_thread"], found
    # the calling context is the real one, innermost last, with the decorator's wrapper
    (_, header, stacks), = [c for c in calls if c[1]["test-id"] == test_id]
    third = [[f.qualname for f in frames] for frames in stacks if frames[-1].qualname == "third"]
    assert third and third[0][-5:] == ["test_millisecond", "first", "deco.<locals>.wrapper",
                                       "second", "third"], third
    # the callee's frame names a line of its body (the decorated `second` starts
    # on its decorator's line, which merge-evidence maps to the enclosing scope)
    lines = {f.qualname: f.line for frames in stacks for f in frames[-1:]}
    source = (tmp_path / "test_short.py").read_text().split("\n")
    assert source[lines["second"] - 1].strip() == "return third(x) * 2"
    assert header["mode"] == "calls" and header["complete"] == "true"
    assert header["calls-exhausted"] == "false"
    assert int(header["samples"]) == sum(stacks.values())
    # the sampler's own file is still written, separately
    assert test_id in {h["test-id"] for _, h, _ in load_out(out)}


BUDGET_TEST = """
    import sys
    import time

    def early():
        return 1

    def late():
        return 2

    def test_budget():
        early()
        end = time.process_time() + 0.6  # well past the 0.05 s budget
        while time.process_time() < end:
            pass
        late()
        # the sampling thread stopped the burst and this thread's next call dropped it
        assert sys.getprofile() is None or sys.version_info >= (3, 12)
"""


def test_budget_switches_call_tracing_off(tmp_path):
    write(tmp_path / "test_budget.py", BUDGET_TEST)
    out = tmp_path / "out"
    proc = run_inner_pytest(tmp_path, "--fastci-trace-out", str(out),
                            "--fastci-trace-calls", "0.05")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (_, header, stacks), = load_calls(out)
    names = functions_in([(None, header, stacks)])["test_budget.py::test_budget"]
    assert "early" in names and "late" not in names, names
    assert header["calls-exhausted"] == "true"
    assert 0.05 <= float(header["calls-cpu-seconds"]) < 0.6
    assert header["calls-budget-seconds"] == "0.05"
    # sampling went on after the burst
    assert "test_budget" in functions_in(load_out(out))["test_budget.py::test_budget"]


def test_zero_budget_writes_no_call_files(tmp_path):
    write(tmp_path / "test_short.py", SHORT_TESTS)
    out = tmp_path / "out"
    proc = run_inner_pytest(tmp_path, "--fastci-trace-out", str(out), env=clean_env(
        FASTCI_TRACE_CALLS="0"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert load_calls(out) == []
    assert len(load_out(out)) == 2


def test_bad_budget_is_a_usage_error(tmp_path):
    write(tmp_path / "test_x.py", "def test_x():\n    pass\n")
    proc = run_inner_pytest(tmp_path, "--fastci-trace-out", str(tmp_path / "o"),
                            "--fastci-trace-calls", "-1")
    assert proc.returncode == 4
    assert "FASTCI_TRACE_CALLS: '-1' must be a non-negative finite number" in proc.stderr


CHILDREN_TEST = """
    import multiprocessing
    import subprocess
    import sys

    def in_fork_worker(x):
        return x + 1

    def test_children():
        ctx = multiprocessing.get_context("fork")
        with ctx.Pool(1) as pool:
            assert pool.map(in_fork_worker, [1]) == [2]
        subprocess.run([sys.executable, "child.py"], check=True)
"""

CHILD = """
    def in_subprocess():
        return 3

    in_subprocess()
"""


def test_child_processes_get_their_own_call_files(tmp_path):
    write(tmp_path / "test_children.py", CHILDREN_TEST)
    write(tmp_path / "child.py", CHILD)
    out = tmp_path / "out"
    proc = run_inner_pytest(tmp_path, "--fastci-trace-out", str(out))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    calls = load_calls(out)
    assert {h["test-id"] for _, h, _ in calls} == {"test_children.py::test_children"}
    by_pid = {}
    for _, header, stacks in calls:
        by_pid.setdefault(header["pid"], set()).update(
            functions_in([(None, header, stacks)])[header["test-id"]])
    assert any("in_fork_worker" in names for names in by_pid.values()), by_pid
    assert any("in_subprocess" in names for names in by_pid.values()), by_pid
    assert len(by_pid) >= 3, by_pid  # pytest, the fork worker, the subprocess


def test_run_wrapper_option_and_show(tmp_path):
    write(tmp_path / "job.py", CHILD)
    out = tmp_path / "out"
    cmd = [PYTHON, "-m", "fastci.trace", "run", "--test-id", "job", "--out", str(out),
           "--calls", "0.1", "--", PYTHON, "job.py"]
    subprocess.run(cmd, cwd=str(tmp_path), env=clean_env(), check=True)
    (path, header, stacks), = load_calls(out)
    assert header["calls-budget-seconds"] == "0.1"
    assert "in_subprocess" in functions_in([(path, header, stacks)])["job"]
    show = subprocess.run([PYTHON, "-m", "fastci.trace", "show", str(path)], env=clean_env(),
                          stdout=subprocess.PIPE, universal_newlines=True, check=True)
    assert "test-id=job" in show.stdout


def test_line_of_offset_matches_f_lineno():
    """The sampler stores f_lasti and maps it to a line later; it must agree with f_lineno."""
    sys.path.insert(0, str(PACKAGE_ROOT))
    from fastci.trace.frames import FrameDescriber

    describer = FrameDescriber(os.getcwd(), os.getcwd(), str(PACKAGE_ROOT / "fastci" / "trace"))
    checked = 0

    def walk():
        nonlocal checked
        frame = sys._getframe()
        while frame is not None:
            assert describer.line(frame.f_code, frame.f_lasti) == (frame.f_lineno or 0)
            checked += 1
            frame = frame.f_back

    def nested(n):
        x = [walk() for _ in range(1)] if n == 0 else nested(n - 1)
        return x

    nested(3)
    assert checked >= 5


def test_call_tracing_error_does_not_change_outcome(tmp_path):
    write(tmp_path / "test_broken.py", """
        from fastci.trace import process

        def test_breaks_tracer():
            def broken(code):
                raise RuntimeError("no repository")
            process.active()._tracer._in_repository = broken

            def fresh():  # a code object not called before: the tracer's slow path
                return 1
            assert fresh() == 1

        def test_still_runs():
            pass
    """)
    proc = run_inner_pytest(tmp_path, "--fastci-trace-out", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "2 passed" in proc.stdout
    assert proc.stderr.count(
        "fastci_trace: call tracing stopped: RuntimeError: no repository") == 1, proc.stderr
