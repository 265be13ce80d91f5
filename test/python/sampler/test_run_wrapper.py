"""`python -m fastci.trace run`: shell jobs, exit status passthrough, kill survival, rate."""

import os
import signal
import subprocess
import time

import pytest

from conftest import PYTHON, by_function, clean_env, load_out, write
from fastci.trace import recorder as trace_recorder

TEST_ID = "ci/job: nightly;smoke"


def wrapper(out, *command, rate=None, flush=None):
    cmd = [PYTHON, "-m", "fastci.trace", "run", "--test-id", TEST_ID, "--out", str(out)]
    cmd += ["--rate", rate] if rate else []
    cmd += ["--flush", flush] if flush else []
    return cmd + ["--"] + list(command)


@pytest.fixture
def job(tmp_path, spin_module):
    """A Python job that spins in job_main for argv[1] seconds (forever if 'inf')."""
    return write(tmp_path / "job.py", """
        import sys
        import spinlib

        def job_main(seconds):
            while True:
                spinlib.spin(min(seconds, 0.05))
                seconds -= 0.05
                if seconds <= 0:
                    return

        job_main(float(sys.argv[1]))
    """)


def test_shell_command_running_python_is_attributed_and_exit_code_passes(tmp_path, job):
    out = tmp_path / "out"
    script = "%s job.py 0.5 && exit 7" % PYTHON
    proc = subprocess.run(wrapper(out, "sh", "-c", script), cwd=str(tmp_path), env=clean_env())
    assert proc.returncode == 7
    evidences = load_out(out)
    assert len(evidences) == 1
    path, header, stacks = evidences[0]
    assert header["test-id"] == TEST_ID
    assert header["complete"] == "true"
    assert by_function(evidences, "job_main")[TEST_ID] >= 15
    assert int(header["samples"]) == sum(stacks.values())


@pytest.mark.parametrize("command,status", [(["false"], 1), (["sh", "-c", "exit 3"], 3),
                                            (["no-such-command-fastci"], 127)])
def test_exit_status_unchanged(tmp_path, command, status):
    proc = subprocess.run(wrapper(tmp_path / "o", *command), env=clean_env(),
                          stderr=subprocess.PIPE, universal_newlines=True)
    assert proc.returncode == status
    if status == 127:
        assert "fastci_trace: run: no-such-command-fastci:" in proc.stderr


def test_death_by_signal_unchanged_and_flushed_complete(tmp_path, job):
    out = tmp_path / "out"
    proc = subprocess.Popen(wrapper(out, PYTHON, "job.py", "inf"), cwd=str(tmp_path),
                            env=clean_env())
    _wait_for_samples(out, proc)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == -signal.SIGTERM
    (_, header, stacks), = load_out(out)
    assert header["complete"] == "true"


def test_sigterm_ends_a_job_blocked_in_c_code(tmp_path):
    """A Python SIGTERM handler runs only when the main thread executes
    bytecode again: one blocked in C code that retries on EINTR (here
    waitpid inside system()) never does. Untraced, SIGTERM kills the job at
    once; traced, the sampling thread sees the unhandled delivery, writes the
    final file and takes the default action itself."""
    if trace_recorder.extension() is None:
        pytest.skip("the watch needs the _recorder extension")
    write(tmp_path / "blocked.py", """
        import ctypes, sys
        print("blocking", flush=True)
        ctypes.CDLL(None).system(b"sleep 60")
        print("returned", flush=True)
    """)
    out = tmp_path / "out"
    proc = subprocess.Popen(wrapper(out, PYTHON, "blocked.py"), cwd=str(tmp_path),
                            env=clean_env(), stdout=subprocess.PIPE, universal_newlines=True,
                            start_new_session=True)
    try:
        assert proc.stdout.readline() == "blocking\n"
        time.sleep(0.2)  # into system()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == -signal.SIGTERM
        assert proc.stdout.read() == ""
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the orphaned sleep
        proc.wait()
    (_, header, _), = load_out(out)
    assert header["complete"] == "true"


def test_sigterm_ends_a_latent_fork_child_blocked_in_c_code(tmp_path):
    """A latent fork child (Sampler.fork_hooks) has no sampling thread to
    see an unhandled SIGTERM, and nothing to write: the extension's handler
    takes the default action at once, as untraced."""
    if trace_recorder.extension() is None:
        pytest.skip("latency needs the _recorder extension")
    write(tmp_path / "forks.py", """
        import ctypes, os, signal, time
        system = ctypes.CDLL(None).system
        pid = os.fork()
        if pid == 0:
            system(b"exec sleep 60 >/dev/null")  # retries waitpid on EINTR: no bytecode runs
            os._exit(3)
        time.sleep(0.3)
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            time.sleep(0.05)
        print("child", pid, os.waitstatus_to_exitcode(status) if done else "alive", flush=True)
    """)
    out = tmp_path / "out"
    proc = subprocess.Popen(wrapper(out, PYTHON, "forks.py"), cwd=str(tmp_path), env=clean_env(),
                            stdout=subprocess.PIPE, universal_newlines=True,
                            start_new_session=True)
    try:
        stdout, _ = proc.communicate(timeout=60)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the orphaned sleep
        proc.wait()
    assert proc.returncode == 0
    _, pid, status = stdout.split()
    assert status == str(-signal.SIGTERM), stdout
    # only the parent wrote: the child had nothing to report
    (_, header, _), = load_out(out)
    assert str(header["pid"]) != pid


def test_sigkill_after_flush_interval_leaves_parseable_file(tmp_path, job):
    out = tmp_path / "out"
    proc = subprocess.Popen(wrapper(out, PYTHON, "job.py", "inf", flush="0.2"),
                            cwd=str(tmp_path), env=clean_env())
    _wait_for_samples(out, proc)
    time.sleep(0.5)  # more than one flush interval
    proc.kill()
    assert proc.wait(timeout=30) == -signal.SIGKILL
    (path, header, stacks), = load_out(out)
    assert header["complete"] == "false"
    assert by_function([(path, header, stacks)], "job_main")[TEST_ID] > 0
    # A kill in the middle of a periodic flush can leave that write's
    # temporary file (2 runs in 12 did): its name never ends in .stacks, so
    # no reader takes it for evidence, and the last complete write stands.
    assert all(p.endswith((".stacks", ".tmp")) for p in os.listdir(path.parent))


def _wait_for_samples(out, proc, timeout=20):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, "job died early"
        files = load_out(out) if out.exists() else []
        if files and int(files[0][1]["samples"]) > 0:
            return
        time.sleep(0.1)
    proc.kill()
    raise AssertionError("no flushed samples within %ss" % timeout)


def test_sampler_runs_at_requested_rate_order(tmp_path, job):
    out = tmp_path / "out"
    proc = subprocess.run(wrapper(out, PYTHON, "job.py", "1.0", rate="100"),
                          cwd=str(tmp_path), env=clean_env())
    assert proc.returncode == 0
    (_, header, _), = load_out(out)
    wall, ticks = float(header["wall-seconds"]), int(header["ticks"])
    assert wall >= 1.0
    # Not a timing test: within a factor of two of 100 Hz is "it really ran".
    assert 50 * wall <= ticks <= 200 * wall, (ticks, wall)
    assert int(header["samples"]) >= ticks * 0.5
    assert header["rate"] == "100"


@pytest.mark.parametrize("args,message", [
    (["--rate", "0"], "must be a positive finite number"),
    (["--rate", "5000"], "exceeds the maximum"),
    (["--flush", "soon"], "is not an interval in seconds"),
])
def test_bad_options_are_reported(tmp_path, args, message):
    cmd = [PYTHON, "-m", "fastci.trace", "run", "--test-id", "x", "--out", str(tmp_path)] + args
    proc = subprocess.run(cmd + ["--", "true"], env=clean_env(), stderr=subprocess.PIPE,
                          universal_newlines=True)
    assert proc.returncode == 2
    assert message in proc.stderr


def test_bad_env_in_child_disables_sampling_without_failing(tmp_path, job):
    env = clean_env(FASTCI_TRACE_TEST_ID="t", FASTCI_TRACE_OUT=str(tmp_path / "o"),
                    FASTCI_TRACE_RATE="often")
    env["PYTHONPATH"] += os.pathsep + os.path.join(env["PYTHONPATH"], "fastci", "trace", "_hook")
    proc = subprocess.run([PYTHON, "job.py", "0.01"], cwd=str(tmp_path), env=env,
                          stderr=subprocess.PIPE, universal_newlines=True)
    assert proc.returncode == 0
    assert "fastci_trace: FASTCI_TRACE_RATE: 'often' is not a rate in Hz; sampling disabled" \
        in proc.stderr
    assert not (tmp_path / "o").exists()
