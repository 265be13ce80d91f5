"""The Ticker (_recorder.c): the sampling thread's wait, and ticks taken by the main thread.

A tick that finds the main thread holding the GIL is queued for it (a
pending call) instead of waiting for the GIL; the others are taken by the
sampling thread. Both read the frames in place and count stacks in C until
drain() hands them to a sink. These tests pin down that the samples are
capture()'s, that each kind of tick happens where it should, and that bad
arguments are refused.
"""

import os
import subprocess
import sys
import threading
import time

import pytest

from conftest import PYTHON, clean_env, parked, write  # also puts the package on sys.path

from fastci.trace import config as trace_config
from fastci.trace import recorder as trace_recorder
from fastci.trace.sampler import Sampler, capture

_EXTENSION = trace_recorder.extension()
pytestmark = pytest.mark.skipif(_EXTENSION is None or not hasattr(_EXTENSION, "Ticker"),
                                reason="no _recorder extension with a Ticker here")


class _Sink:
    """What drain() needs of a sampler Sink."""

    def __init__(self):
        self.counts = {}
        self.ticks = 0


def _spin(seconds):
    end = time.monotonic() + seconds
    n = 0
    while time.monotonic() < end:
        n += _spun(20)
    return n


def _spun(depth):
    return _spun(depth - 1) + 1 if depth else 0


def _sampler(tmp_path, rate):
    env = {trace_config.ENV_OUT: str(tmp_path / "out"), trace_config.ENV_RATE: str(rate),
           trace_config.ENV_ROOT: str(tmp_path), trace_config.ENV_REVISION: "r1",
           trace_config.ENV_CALLS: "0"}
    return Sampler(trace_config.from_env(env, str(tmp_path)), cwd=str(tmp_path))


def _start_awake(sampler):
    """Start sampling at once: the code these tests spin is not the
    repository's (tmp_path), so no first execution would wake the Ticker."""
    sampler.start()
    sampler._ticker.wake()


def _has_code(key, codes, code):
    return any(codes[key[i]] is code for i in range(0, len(key), 2))


def test_housekeeping_rides_on_the_next_tick():
    """Housekeeping due shortly before a tick waits for that tick's wake-up
    (a wake-up of its own would be one more context switch) and returns
    after taking it; due long before the next tick, it wakes on its own."""
    ticker = _EXTENSION.Ticker([_Sink()], {})  # main=False: nothing is queued
    result = {}

    def sampling_thread():
        start = time.monotonic()
        result["soon"] = ticker.wait(start, 0.04, start + 0.005) - start
        result["soon_took"] = time.monotonic() - start
        start = time.monotonic()
        result["late"] = ticker.wait(start + 5.0, 5.0, start + 0.005) - start
        result["late_took"] = time.monotonic() - start

    thread = threading.Thread(target=sampling_thread)
    thread.start()
    thread.join(30)
    # The tick at `start`, then housekeeping rides on the one 0.04 s later.
    assert result["soon_took"] >= 0.039 and result["soon"] >= 0.079, result
    # The next tick is 5 s away: housekeeping at its due time, no tick taken.
    assert result["late_took"] < 4.0 and abs(result["late"] - 5.0) < 1e-6, result


def test_drained_samples_are_the_python_captures():
    started, release = threading.Event(), threading.Event()
    worker = threading.Thread(target=parked, args=(40, started, release))
    worker.start()
    started.wait(30)
    sink, codes = _Sink(), {}
    ticker = _EXTENSION.Ticker([sink], codes)  # main=False: every tick is the thread's
    result = {}

    def sampling_thread():
        now = time.monotonic()
        listening.append(True)
        result["next"] = ticker.wait(now, 0.01, now + 0.1)
        listening.clear()
        result["expected_codes"] = {}
        result["expected"] = {}
        capture(result["expected"], threading.get_ident(), result["expected_codes"])

    events = []
    listening = []  # an audit hook cannot be removed: it goes quiet after
    sys.addaudithook(lambda event, args: events.append(event) if listening else None)
    try:
        thread = threading.Thread(target=sampling_thread)
        thread.start()
        thread.join(30)
        assert ticker.drain(sink) is True
    finally:
        release.set()
        worker.join(30)
    assert ticker.deferred == 0 and ticker.error is None
    assert result["next"] > time.monotonic() - 1
    assert sink.ticks >= 5  # 0.1 s of 10 ms ticks, on a loaded machine too
    mine = [k for k in sink.counts if _has_code(k, codes, parked.__code__)]
    expected = [k for k in result["expected"] if _has_code(k, codes, parked.__code__)]
    # The parked worker's stack, innermost first, keyed exactly as capture() keys it.
    assert mine == expected and len(mine) == 1
    assert sink.counts[mine[0]] == sink.ticks
    assert sum(codes[mine[0][i]] is parked.__code__ for i in range(0, len(mine[0]), 2)) == 41
    expected_codes = result["expected_codes"]
    assert all(codes[mine[0][i]] is expected_codes[mine[0][i]] for i in range(0, len(mine[0]), 2))
    # The frames are read in place: no `id()`, `f_code` or _current_frames audit event.
    assert not {"builtins.id", "object.__getattr__", "sys._current_frames"} & set(events), events
    # Drained means handed over: a second drain adds nothing.
    before = dict(sink.counts), sink.ticks
    assert ticker.drain(sink) is True
    assert (sink.counts, sink.ticks) == before


def test_a_busy_main_thread_takes_its_own_ticks(tmp_path):
    sampler = _sampler(tmp_path, rate=200)
    sampler.begin("busy")
    _start_awake(sampler)
    sink = sampler._sinks[-1]
    _spin(0.4)
    ticker = sampler._ticker
    sampler._settle(sink)  # the samples so far, before end() folds them into text
    counts, ticks = dict(sink.counts), sink.ticks
    sampler.end()
    sampler.stop()
    if sys.version_info < (3, 11):
        assert ticker.deferred == 0  # 3.9/3.10: the sampling thread takes every tick
    else:
        # Pure Python holds the GIL nearly all the time: most ticks are queued.
        assert ticker.deferred >= 20 and ticker.deferred >= ticker.captures // 2
        assert ticker.main_cpu > 0
    assert sink.ticks >= 20
    spun = sum(n for k, n in counts.items() if _has_code(k, sampler._codes, _spin.__code__))
    assert spun >= ticks * 3 // 4
    assert sink.sampler_cpu > 0


def test_a_blocked_main_thread_leaves_the_ticks_to_the_sampling_thread(tmp_path):
    sampler = _sampler(tmp_path, rate=200)
    sampler.begin("blocked")
    _start_awake(sampler)
    sink = sampler._sinks[-1]
    worker = threading.Thread(target=_spin, args=(0.4,))
    worker.start()
    worker.join(30)  # the main thread waits without the GIL
    ticker = sampler._ticker
    sampler._settle(sink)
    counts, ticks = dict(sink.counts), sink.ticks
    sampler.end()
    sampler.stop()
    assert sink.ticks >= 20
    assert ticker.deferred <= sink.ticks // 4
    spun = sum(n for k, n in counts.items() if _has_code(k, sampler._codes, _spin.__code__))
    assert spun >= ticks * 3 // 4


@pytest.mark.skipif(sys.version_info < (3, 11), reason="3.9/3.10: no ticks are queued")
def test_ticks_back_off_while_a_queued_one_waits_for_a_long_c_call(tmp_path):
    """A main thread in a long C call that keeps the GIL (loading libtorch's
    libraries) runs no pending call until it returns: the ticks that come
    meanwhile collapse into the queued one, so the sampling thread backs
    off instead of waking for each (counted from /proc: schedstat's third
    field). The queued tick is still taken when the call returns."""
    sampler = _sampler(tmp_path, rate=200)
    sampler.begin("c-call")
    _start_awake(sampler)
    _spin(0.1)  # the thread runs and waits in the Ticker
    tids = [t for t in os.listdir("/proc/self/task") if int(t) != threading.get_native_id()]

    def schedules():
        total = 0
        for t in tids:
            try:
                with open("/proc/self/task/%s/schedstat" % t) as f:
                    total += int(f.read().split()[2])
            except OSError:
                pass
        return total

    ticker = sampler._ticker
    deferred, before = ticker.deferred, schedules()
    start = time.monotonic()
    sum(range(80_000_000))  # C code, the GIL held, no eval-breaker check
    took = time.monotonic() - start
    woke = schedules() - before
    _spin(0.05)  # the queued tick runs here
    sampler.end()
    sampler.stop()
    assert took >= 0.2, "the C call was too short to tell"
    # 5 ms ticks: one wake-up per tick would be took / 0.005 of them.
    assert woke <= took / 0.005 / 3, (woke, took)
    assert ticker.deferred > deferred


def test_ticker_refuses_bad_arguments():
    with pytest.raises(TypeError):
        _EXTENSION.Ticker((), {})
    with pytest.raises(TypeError):
        _EXTENSION.Ticker([], [])
    ticker = _EXTENSION.Ticker([], {})
    with pytest.raises(ValueError, match="interval must be positive"):
        ticker.wait(0.0, 0.0, 1.0)
    with pytest.raises(AttributeError):
        ticker.drain(object())
    bad = _Sink()
    bad.counts = []
    with pytest.raises(TypeError, match="sink.counts must be a dict"):
        ticker.drain(bad)
    ticker.stop()
    start = time.monotonic()
    ticker.wait(start + 60, 1.0, start + 60)  # stopped: returns at once
    assert time.monotonic() - start < 1.0
    with pytest.raises(TypeError, match="wants a callable or None"):
        _EXTENSION.set_wake_hook(1)
    assert _EXTENSION.set_wake_hook(None) is True


def test_a_dormant_ticker_waits_for_repository_code_at_test_time(tmp_path):
    """Where the recorder is exact, the sampling thread takes no ticks until
    repository code runs at test time: before, a sample could only count as
    import-time or external. The first test-time execution wakes it at once
    and for good (a later dormant Ticker starts awake), and starts the
    thread itself, which waited for it (Sampler.start's `lazily`); wake()
    ends a dormancy nothing else would. A fresh process: the answer is per
    process."""
    repo = tmp_path / "repo"
    repo.mkdir()
    write(repo / "busy.py", """
        import time

        def work(seconds):
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                pass
        """)
    driver = write(tmp_path / "driver.py", """
        import sys, time
        from fastci.trace import config, process, recorder
        repo = sys.argv[1]
        env = {config.ENV_OUT: repo + "/../out", config.ENV_RATE: "200", config.ENV_ROOT: repo,
               config.ENV_REVISION: "r1", config.ENV_CALLS: "0"}
        sampler = process.start(config.from_env(env, repo), "t::dormant")
        ticker, sink = sampler._ticker, sampler._sinks[-1]

        def ticks():
            sampler._settle(sink)
            return sink.ticks

        end = time.monotonic() + 0.3
        while time.monotonic() < end:  # not the repository's code
            pass
        sys.path.insert(0, repo)
        import busy  # import time: still dormant
        print("before", sampler.coverage, ticker.dormant, ticks(), sampler._thread is None)
        busy.work(0.3)
        print("after", ticker.dormant, ticks() > 10, sampler._thread is None)
        Ticker = recorder.extension().Ticker
        print("later", Ticker([], {}, dormant=True).dormant,
              recorder.extension().set_wake_hook(print))  # nothing left to wait for
        process.stop()
        """)
    out = subprocess.run([PYTHON, str(driver), str(repo)], env=clean_env(), timeout=60,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:3] == ["before exact True 0 True", "after False True False",
                                          "later False False"], out.stdout + out.stderr
    wake = write(tmp_path / "wake.py", """
        import threading, time
        from fastci.trace import recorder

        class Sink:
            counts, ticks = {}, 0

        sink = Sink()
        ticker = recorder.extension().Ticker([sink], {}, dormant=True)

        def sampling_thread():  # as the sampler's: back after housekeeping
            end = time.monotonic() + 0.4
            next_tick = time.monotonic()
            while time.monotonic() < end:
                next_tick = ticker.wait(next_tick, 0.01, end)

        thread = threading.Thread(target=sampling_thread)
        thread.start()
        time.sleep(0.1)
        asleep = ticker.dormant
        ticker.wake()
        thread.join()
        ticker.drain(sink)
        print(asleep, ticker.dormant, sink.ticks > 5)
        """)
    out = subprocess.run([PYTHON, str(wake)], env=clean_env(), timeout=60,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert out.stdout.split() == ["True", "False", "True"], out.stdout + out.stderr


@pytest.mark.skipif(sys.version_info < (3, 11),
                    reason="3.9/3.10: the Ticker cannot tell the GIL's holder")
def test_dormant_housekeeping_waits_for_the_main_thread_to_let_go_of_the_gil(tmp_path):
    """A dormant Ticker returns for housekeeping (which needs the GIL) at a
    moment the main thread does not hold it, or HOUSEKEEPING_LATE (1 s)
    after it fell due: taking the GIL from a busy main thread costs both
    threads a switch, and a child importing torch would pay one every 0.1 s
    (docs/Evidence.md). Woken, it keeps the housekeeping due of an awake
    Ticker, not its own. A fresh process: dormancy is per process."""
    driver = write(tmp_path / "driver.py", """
        import threading, time
        from fastci.trace import recorder

        class Sink:
            counts, ticks = {}, 0

        ticker = recorder.extension().Ticker([Sink()], {}, main=True, dormant=True)
        took = {}

        def sampling_thread(name):
            start = time.monotonic()
            ticker.wait(start, 0.02, start + 0.05)
            took[name] = time.monotonic() - start

        thread = threading.Thread(target=sampling_thread, args=("busy",))
        thread.start()
        end = time.monotonic() + 0.6
        while time.monotonic() < end:  # holds the GIL but at switch intervals
            pass
        thread.join()
        thread = threading.Thread(target=sampling_thread, args=("idle",))
        thread.start()
        thread.join()  # without the GIL
        # Woken, its housekeeping is the awake one's (the sampler gives a
        # dormant Ticker only its next flush, `dormant_due`).
        woken = recorder.extension().Ticker([Sink()], {}, dormant=True)

        def woken_thread():
            start = time.monotonic()
            woken.wait(start, 0.02, start + 0.05, start + 5.0)
            took["woken"] = time.monotonic() - start

        thread = threading.Thread(target=woken_thread)
        thread.start()
        time.sleep(0.1)
        woken.wake()
        thread.join()
        print(ticker.dormant, took["busy"] >= 0.5, took["idle"] < 0.5, took["woken"] < 1.0, took)
        """)
    out = subprocess.run([PYTHON, str(driver)], env=clean_env(), timeout=60,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert out.stdout.split()[:4] == ["True", "True", "True", "True"], out.stdout + out.stderr


def test_a_sleeping_ticker_wakes_only_when_there_is_something_to_do(tmp_path):
    """The sampling thread sleeps until its next tick or housekeeping, with
    no periodic wake-up: a dormant Ticker whose flush is 2 s away is
    scheduled a few times in 1 s, not once a slice (each wake-up of a
    thread cost a process that imported torch 0.3-1 ms, docs/Evidence.md).
    stop() ends the sleep at once, and so does a delivery of the watched
    signal (its Python handler may never run: process.py's SIGTERM watch).
    Schedules are counted from /proc (schedstat's third field). A fresh
    process: dormancy and the watched signal are per process."""
    driver = write(tmp_path / "driver.py", """
        import os, signal, threading, time
        from fastci.trace import recorder

        class Sink:
            counts, ticks = {}, 0

        ext = recorder.extension()
        took, tids = {}, {}

        def run(name, ticker, interval, due):
            tids[name] = threading.get_native_id()
            start = time.monotonic()
            ticker.wait(start, interval, start + due)
            took[name] = time.monotonic() - start

        def schedules(tid):
            with open("/proc/self/task/%d/schedstat" % tid) as f:
                return int(f.read().split()[2])

        dormant = ext.Ticker([Sink()], {}, dormant=True)
        thread = threading.Thread(target=run, args=("dormant", dormant, 0.02, 2.0))
        thread.start()
        time.sleep(0.1)
        before = schedules(tids["dormant"])
        time.sleep(1.0)
        woke = schedules(tids["dormant"]) - before
        dormant.stop()
        thread.join()
        # Awake at 0.01 Hz: the next tick and housekeeping are 100 s away.
        signal.signal(signal.SIGUSR1, lambda *a: None)
        assert ext.watch_signal(signal.SIGUSR1)
        awake = ext.Ticker([Sink()], {})
        thread = threading.Thread(target=run, args=("signal", awake, 100.0, 100.0))
        thread.start()
        time.sleep(0.3)
        signal.pthread_kill(threading.get_ident(), signal.SIGUSR1)
        thread.join()
        print(woke <= 3, took["dormant"] < 1.5, took["signal"] < 1.0, woke, took)
        """)
    out = subprocess.run([PYTHON, str(driver)], env=clean_env(), timeout=60,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert out.stdout.split()[:3] == ["True", "True", "True"], out.stdout + out.stderr


def _park(depth):
    """A thread parked `depth` frames deep, and the event that releases it."""
    started, release = threading.Event(), threading.Event()
    worker = threading.Thread(target=parked, args=(depth, started, release))
    worker.start()
    started.wait(30)
    return worker, release


def _wait_in_thread(ticker, interval, seconds):
    """Run ticker.wait() for `seconds` from a sampling thread; its next tick."""
    result = {}

    def sampling_thread():
        now = time.monotonic()
        result["next"] = ticker.wait(now, interval, now + seconds)

    thread = threading.Thread(target=sampling_thread)
    thread.start()
    thread.join(60)
    return result["next"]


def test_ticks_back_off_while_the_stacks_stay_the_same():
    """A thread parked in one place gives every tick the same stack: each
    such tick doubles the interval to the next, up to 8 intervals, and
    counts for the intervals it stands for, so ticks and samples still
    measure time. A changed stack restores the rate (the next test)."""
    worker, release = _park(10)
    sink, codes = _Sink(), {}
    ticker = _EXTENSION.Ticker([sink], codes)
    try:
        _wait_in_thread(ticker, 0.01, 0.6)
        assert ticker.drain(sink) is True
    finally:
        release.set()
        worker.join(30)
    # Ticks at 0, 0.01, 0.03, 0.07, 0.15, then every 0.08 s: 10 for 60 intervals.
    assert 5 <= ticker.captures <= 15, ticker.captures
    assert 40 <= sink.ticks <= 70, sink.ticks  # the intervals, on a loaded machine too
    mine = [k for k in sink.counts if _has_code(k, codes, parked.__code__)]
    assert len(mine) == 1 and sink.counts[mine[0]] == sink.ticks
    # The sampling thread joined the main thread: the stacks stay the same.
    assert ticker.stride == 1  # drained: the full rate again


def test_changing_stacks_keep_the_full_rate():
    stop = []

    def busy():
        while not stop:
            _spin(0.01)

    worker = threading.Thread(target=busy)
    worker.start()
    sink, codes = _Sink(), {}
    ticker = _EXTENSION.Ticker([sink], codes)
    try:
        _wait_in_thread(ticker, 0.01, 0.5)
        ticker.drain(sink)
    finally:
        stop.append(True)
        worker.join(30)
    # Backed off throughout, 0.5 s would take 9 ticks; a spinning thread is
    # caught at the same instruction twice now and then (where it drops
    # the GIL), which backs off one tick.
    assert ticker.captures >= 20, (ticker.captures, sink.ticks)


def test_a_drain_ends_the_back_off_at_once():
    """A new sink (a test begins or ends) gets ticks at the full rate from
    its start: drain() wakes a backed-off sampling thread, whose next tick
    then comes an interval later instead of up to 8."""
    worker, release = _park(10)
    sink, codes = _Sink(), {}
    ticker = _EXTENSION.Ticker([sink], codes)
    result = {}

    def sampling_thread():
        now = time.monotonic()
        ticker.wait(now, 0.25, now + 10)

    thread = threading.Thread(target=sampling_thread)
    try:
        thread.start()
        deadline = time.monotonic() + 30
        while ticker.stride < 8:  # ticks at 0, 0.25, 0.75, 1.75: backed off to 2 s
            assert time.monotonic() < deadline, ticker.stride
            time.sleep(0.02)
        taken = ticker.captures
        ticker.drain(sink)
        drained = time.monotonic()
        while ticker.captures == taken and time.monotonic() < drained + 5:
            time.sleep(0.01)
        result["after"] = time.monotonic() - drained
        ticker.stop()
        thread.join(30)
    finally:
        release.set()
        worker.join(30)
    assert result["after"] < 1.0, result  # one interval (0.25 s), not 2 s


def test_import_time_stacks_are_only_counted_where_the_recorder_is_exact(tmp_path):
    """Given importlib's _find_and_load, a stack through it (or a class
    body) goes to sink.import_samples instead of sink.counts, as _fold
    would count it; such ticks back off even as the imports change."""
    write(tmp_path / "fastci_slow_import.py", """
        import threading
        STARTED = threading.Event()

        def wait_here(release):
            STARTED.set()
            release.wait(30)

        wait_here(__import__("builtins").fastci_release)
        """)
    import builtins
    release = threading.Event()
    builtins.fastci_release = release
    sys.path.insert(0, str(tmp_path))
    worker = threading.Thread(target=__import__, args=("fastci_slow_import",))
    try:
        worker.start()
        deadline = time.monotonic() + 30
        # The module is in sys.modules before its body has bound STARTED.
        while not getattr(sys.modules.get("fastci_slow_import"), "STARTED",
                          threading.Event()).is_set():
            assert time.monotonic() < deadline
            time.sleep(0.01)
        sink, codes = _Sink(), {}
        sink.import_samples = 0
        ticker = _EXTENSION.Ticker([sink], codes, imports=trace_recorder._FIND_AND_LOAD)
        _wait_in_thread(ticker, 0.01, 0.3)
        ticker.drain(sink)
    finally:
        release.set()
        worker.join(30)
        sys.path.remove(str(tmp_path))
        sys.modules.pop("fastci_slow_import", None)
        del builtins.fastci_release
    assert sink.import_samples >= 20 and ticker.captures <= sink.import_samples // 2, \
        (sink.import_samples, ticker.captures)
    # Only the main thread's own stack (in join) is kept.
    assert not any(codes[k[i]].co_filename.endswith("fastci_slow_import.py")
                   for k in sink.counts for i in range(0, len(k), 2))
    with pytest.raises(TypeError, match="imports must be a code object"):
        _EXTENSION.Ticker([], {}, imports=42)
