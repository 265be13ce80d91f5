"""The sampler's life cycle costs a process nothing it does not need to.

* stop() does not wait out the sampling thread's sleep (up to an interval
  per process exit), and a thread it left asleep never samples again, even
  when the sampler is started again at once;
* the modules a sink imported are found from a mark on sys.modules, without
  touching the entries before it (a fork child would copy every page that
  holds one), and a mark that left sys.modules over-reports, never omits;
* a flush never replaces a sink's final file, and only a sink a flush
  interval old is flushed.

The Ticker's captures are test_ticker.py's.
"""

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from conftest import PYTHON, clean_env, recorded, write  # also puts the package on sys.path

from fastci.trace import config as trace_config
from fastci.trace import recorder as trace_recorder
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
    sampler = _sampler(tmp_path, rate=0.5)  # a 2 s interval
    threads_before = threading.enumerate()
    sampler.begin("t")
    sampler.start()
    _wait_asleep(sampler)
    old = sampler._thread
    # A `_thread` thread: invisible to the program's threading.enumerate().
    assert threading.enumerate() == threads_before
    started = time.monotonic()
    sampler.stop()
    # Not joined: stop() returns without waiting for the thread's wake-up.
    assert time.monotonic() - started < 1.0
    sampler.start()
    sampler.begin("t2")
    # The old thread wakes (the Ticker's stop() ends its sleep, without
    # the extension a slice ends it) and returns; only the new one samples.
    old.join(timeout=5)
    assert not old.is_alive()
    assert sampler._thread.is_alive() and sampler._thread is not old
    sampler.end()
    sampler.stop()
    assert (tmp_path / "out").is_dir()


def _sampler_flushing(tmp_path, flush):
    env = {trace_config.ENV_OUT: str(tmp_path / "out"), trace_config.ENV_RATE: "50",
           trace_config.ENV_ROOT: str(tmp_path), trace_config.ENV_REVISION: "r1",
           trace_config.ENV_CALLS: "0", trace_config.ENV_FLUSH: flush}
    return Sampler(trace_config.from_env(env, str(tmp_path)), cwd=str(tmp_path))


def _complete(sink):
    with open(sink.path) as f:
        return [line for line in f if line.startswith("# complete:")]


def test_a_flush_never_replaces_the_final_file(tmp_path):
    """A flush the sampling thread began before a test ended must not land
    after the test's final file: that left a record `complete: false`,
    cut to the functions of its first milliseconds (seen in a replay)."""
    sampler = _sampler_flushing(tmp_path, "5")
    sampler.begin("t")
    sink = sampler._sinks[-1]
    sampler.end()
    assert _complete(sink) == ["# complete: true\n"]
    sampler._write(sink, complete=False)  # the late flush
    assert _complete(sink) == ["# complete: true\n"]
    sampler.stop()


def test_only_sinks_a_flush_interval_old_are_flushed(tmp_path):
    """The periodic flush saves what a long test has seen in case the
    process dies; a test younger than the interval has nothing it must
    save, however soon the sampler's own flush comes due."""
    sampler = _sampler_flushing(tmp_path, "0.3")
    sampler.start()
    sampler._ticker and sampler._ticker.wake()  # tmp_path code never wakes it
    time.sleep(0.5)  # the sampler's first flush is due
    sampler.begin("young")
    young = sampler._sinks[-1]
    time.sleep(0.1)
    assert not os.path.exists(young.path)
    deadline = time.monotonic() + 30
    while not os.path.exists(young.path):
        assert time.monotonic() < deadline, "never flushed"
        time.sleep(0.05)
    assert time.monotonic() - young.opened >= 0.3
    assert _complete(young) == ["# complete: false\n"]
    sampler.end()
    assert _complete(young) == ["# complete: true\n"]
    sampler.stop()


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


def test_real_path_resolves_each_directory_once_and_follows_links(tmp_path):
    from fastci.trace.frames import FrameDescriber
    repo, outside = tmp_path / "repo", tmp_path / "outside"
    (repo / "pkg").mkdir(parents=True)
    outside.mkdir()
    (repo / "pkg" / "own.py").write_text("")
    (outside / "vendored.py").write_text("")
    (outside / "pkg_link").symlink_to(repo / "pkg", target_is_directory=True)
    (outside / "linked.py").symlink_to(repo / "pkg" / "own.py")
    describer = FrameDescriber(str(repo), str(tmp_path), str(tmp_path / "none"))
    real = str(repo / "pkg" / "own.py")
    assert describer.real_path(str(outside / "vendored.py")) == str(outside / "vendored.py")
    assert describer.real_path(str(outside / "linked.py")) == real  # a file link
    assert describer.real_path(str(outside / "pkg_link" / "own.py")) == real  # a directory link
    # A link made after its directory was listed is still followed.
    (outside / "later.py").symlink_to(repo / "pkg" / "own.py")
    assert describer.real_path(str(outside / "later.py")) == real
    assert describer.in_repository_file(str(outside / "linked.py"))
    assert not describer.in_repository_file(str(outside / "vendored.py"))


@pytest.mark.parametrize("native", [True, False], ids=["extension", "python"])
def test_only_the_directories_of_judged_files_are_listed(tmp_path, monkeypatch, native):
    """A judged file's directory is listed once, for its links; its
    ancestors (/usr, site-packages, ...) are resolved by one lstat each,
    and still through a link among them; the other files of a listed
    directory cost no system call. The extension's links() and the
    Python scan find the same links."""
    from fastci.trace import frames
    if native and getattr(trace_recorder.extension(), "links", None) is None:
        pytest.skip("no _recorder extension for this interpreter")
    repo, deep = tmp_path / "repo", tmp_path / "site" / "packages" / "lib"
    (repo / "pkg").mkdir(parents=True)
    deep.mkdir(parents=True)
    for f in (repo / "pkg" / "a.py", repo / "pkg" / "b.py", deep / "m.py", deep / "n.py"):
        f.write_text("")
    (tmp_path / "site" / "linked").symlink_to(repo, target_is_directory=True)
    (deep / "link.py").symlink_to(deep / "m.py")
    (deep / "dangling.py").symlink_to(deep / "gone.py")
    links = trace_recorder.extension().links if native else frames._scan_links
    listed = []
    monkeypatch.setattr(frames, "_links_of", lambda d: listed.append(d) or links(d))
    looked_at = []
    monkeypatch.setattr(os, "lstat", lambda p, real=os.lstat: looked_at.append(str(p)) or real(p))
    describer = frames.FrameDescriber(str(repo), str(tmp_path), str(tmp_path / "none"))
    assert not describer.in_repository_file(str(deep / "m.py"))
    assert describer.in_repository_file(str(tmp_path / "site" / "linked" / "pkg" / "a.py"))
    assert listed == [str(deep), str(tmp_path / "site" / "linked" / "pkg")]
    assert describer._dir_verdicts[str(deep)][1] == {"link.py", "dangling.py"}
    looked_at.clear()
    assert not describer.in_repository_file(str(deep / "n.py"))
    assert describer.in_repository_file(str(tmp_path / "site" / "linked" / "pkg" / "b.py"))
    assert looked_at == [] and len(listed) == 2
    assert describer.outside == set()  # deep has links: its files are judged one by one
    assert frames._scan_links(str(deep)) == links(str(deep))
    assert frames._links(str(tmp_path / "missing")) is None


def test_in_repository_file_judges_by_directory_but_follows_file_links(tmp_path):
    """A file is judged by its listed directory's real path; a name that
    is a link is resolved on its own."""
    from fastci.trace.frames import FrameDescriber
    repo, outside, own = tmp_path / "repo", tmp_path / "outside", tmp_path / "fastci"
    for d in (repo / "pkg", outside, own):
        d.mkdir(parents=True)
    for f in (repo / "pkg" / "a.py", outside / "v.py", own / "s.py"):
        f.write_text("")
    (outside / "dir_link").symlink_to(repo / "pkg", target_is_directory=True)
    (outside / "in.py").symlink_to(repo / "pkg" / "a.py")
    (repo / "pkg" / "out.py").symlink_to(outside / "v.py")
    (repo / "own_link").symlink_to(own, target_is_directory=True)
    describer = FrameDescriber(str(repo), str(tmp_path), str(own))
    verdicts = {
        repo / "pkg" / "a.py": True, outside / "v.py": False,
        outside / "in.py": True,                # a file link into the repository
        repo / "pkg" / "out.py": False,         # a file link out of it
        outside / "dir_link" / "a.py": True,    # a directory link into it
        repo / "own_link" / "s.py": False,      # the sampler's own files
    }
    for _ in range(2):  # listed on the first round, from the listings on the second
        assert {p: describer.in_repository_file(str(p)) for p in verdicts} == verdicts
    # What the audit hook may drop unseen: the files of directories outside
    # the repository that hold no links.
    assert describer.outside == {str(repo / "own_link")}
    # Names created after their directory was listed are judged as its
    # other files, links too (the documented limit of one listing).
    (outside / "late.py").symlink_to(repo / "pkg" / "a.py")
    (repo / "pkg" / "late_out.py").symlink_to(outside / "v.py")
    (repo / "pkg" / "late.py").write_text("")
    assert not describer.in_repository_file(str(outside / "late.py"))
    assert describer.in_repository_file(str(repo / "pkg" / "late_out.py"))
    assert describer.in_repository_file(str(repo / "pkg" / "late.py"))
    assert describer.repository_file(str(outside / "in.py")) == os.path.join("pkg", "a.py")
    assert describer.repository_file(str(outside / "v.py")) is None
    assert not describer.in_repository_file("<frozen os>")


_ENTRY_SOURCE = '''\
class OnlyMethods:
    def a(self):
        return 1
    @staticmethod
    def b():
        return 2
class WithDoc:
    """doc"""
    def a(self):
        pass
class AttrAfter:
    @property
    def a(self):
        return 1
    x = [i for i in range(3)]
    def c(self, key=lambda v: v):
        return key
    y = 2
@decorate
def f(a,
      b=lambda: 0):
    def inner():
        pass
    return inner
def g(): return [x for x in ()]
'''


def test_entry_line_skips_nested_code_lazily_with_the_same_answers():
    """_entry_line finds the first own line outside every nested code; it is
    checked against the direct definition on code of every shape."""
    import types
    from fastci.trace.frames import _entry_line, _line_table

    def direct(code, lines):
        spans = [(c.co_firstlineno, max([n for n in _line_table(c)[1] if n] + [c.co_firstlineno]))
                 for c in code.co_consts if isinstance(c, types.CodeType)]
        for line in sorted({n for n in lines if n and n > code.co_firstlineno}):
            if not any(first <= line <= last for first, last in spans):
                return line
        return code.co_firstlineno

    def walk(code):
        yield code
        for c in code.co_consts:
            if isinstance(c, types.CodeType):
                yield from walk(c)

    found = {}
    for code in walk(compile(_ENTRY_SOURCE, "m.py", "exec")):
        lines = _line_table(code)[1]
        if code.co_name != "<module>":
            assert _entry_line(code, lines) == direct(code, lines), code.co_name
        found[code.co_name, code.co_firstlineno] = _entry_line(code, lines)
    assert found["OnlyMethods", 1] == 1 and found["WithDoc", 7] == 8
    # line 15 lies in its own comprehension (one line): `y = 2` is the first.
    assert found["AttrAfter", 11] == 18 and found["f", 19] == 24
    assert found["<module>", 1] == 0


def _run_with_each_audit_hook(script):
    """(setting, stdout) of `script` with the C hook (None) and the
    sys.addaudithook fallback ("off")."""
    for setting in (None, "off"):
        env = clean_env()
        if setting:
            env[trace_recorder.ENV_RECORDER] = setting
        yield setting, subprocess.run([PYTHON, str(script)], env=env, capture_output=True,
                                      text=True, check=True).stdout


def test_audit_hooks_see_only_the_events_they_name(tmp_path):
    """The C hook (and the sys.addaudithook fallback) calls back for the named
    events only: the id() and f_code events of every frame a program walks
    cost no Python call."""
    script = tmp_path / "hooks.py"
    script.write_text(
        "import os, sys\n"
        "from fastci.trace import recorder\n"
        "seen = []\n"
        "recorder.add_audit_hook(lambda event, args: seen.append((event, args[0])),\n"
        "                        ('open', 'fastci.test'))\n"
        "id(seen); sys._getframe().f_code\n"
        "open(os.devnull).close()\n"
        "sys.audit('fastci.test', 42)\n"
        "print(recorder.extension() is not None, sorted({e for e, _ in seen}),\n"
        "      ('fastci.test', 42) in seen, any(a == os.devnull for e, a in seen if e == 'open'))\n")
    for setting, out in _run_with_each_audit_hook(script):
        out = out.split()
        assert out[1:] == ["['fastci.test',", "'open']", "True", "True"], (setting, out)
        if setting == "off":
            assert out[0] == "False"  # the sys.addaudithook fallback
        elif trace_recorder.extension() is not None:
            assert out[0] == "True"  # the C hook


def test_audit_hooks_drop_events_about_files_the_callback_ignores(tmp_path):
    """Events whose path ends with a dropped suffix, whose directory is in
    the set held by `files` (swappable), or that name no file (`<string>`:
    code compiled from a string), never reach the callback; other
    directories (a subdirectory too), names that only begin or end like a
    pseudo-file, and paths that are not str still do. Both hooks, the same
    answers."""
    script = tmp_path / "drop.py"
    script.write_text(
        "import os, sys\n"
        "from fastci.trace import recorder\n"
        "seen = []\n"
        "files = [{'/d'}]\n"
        "recorder.add_audit_hook(lambda event, args: seen.append(args[0]), ('fastci.test',),\n"
        "                        suffixes=('.py', '.pyc'), files=files)\n"
        "code = compile('1', '/d/skip.json', 'eval')\n"
        "for path in ('/a/m.py', '/a/m.pyc', '/a/m.pyx', '/d/skip.json', '/d/sub/keep.json',\n"
        "             '/e/keep.json', 'skip.json', b'/a/m.py', 7, '<string>', '<', '<x', 'x>'):\n"
        "    sys.audit('fastci.test', path)\n"
        "sys.audit('fastci.test', code)\n"
        "sys.audit('fastci.test', compile('1', '<frozen m>', 'eval'))\n"
        "files[0] = frozenset({'/e'})\n"
        "sys.audit('fastci.test', '/d/skip.json'); sys.audit('fastci.test', '/e/keep.json')\n"
        "files[0] = set()\n"
        "sys.audit('fastci.test', code)\n"
        "print(repr([a if not hasattr(a, 'co_filename') else 'code' for a in seen]))\n")
    expected = repr(["/a/m.pyx", "/d/sub/keep.json", "/e/keep.json", "skip.json", b"/a/m.py", 7,
                     "<", "<x", "x>", "/d/skip.json", "code"])
    for setting, out in _run_with_each_audit_hook(script):
        assert out.strip() == expected, setting


def test_add_audit_hook_rejects_bad_arguments():
    module = trace_recorder.extension()
    if module is None or not hasattr(module, "add_audit_hook"):
        pytest.skip("no _recorder extension for this interpreter")
    with pytest.raises(TypeError):
        module.add_audit_hook(1, ("open",))
    with pytest.raises(TypeError):
        module.add_audit_hook(lambda event, args: None, ("open", 1))
    with pytest.raises(TypeError):
        module.add_audit_hook(lambda event, args: None, ["open"])
    with pytest.raises(TypeError):
        module.add_audit_hook(lambda event, args: None, ("open",), (".py", 1))
    with pytest.raises(TypeError):
        module.add_audit_hook(lambda event, args: None, ("open",), (), {})


def test_signal_watch_counts_deliveries_in_front_of_the_python_handler(tmp_path):
    if trace_recorder.extension() is None:
        pytest.skip("no _recorder extension for this interpreter")
    script = write(tmp_path / "watch.py", """
        import os, signal
        from fastci.trace import recorder
        module = recorder.extension()
        print(module.watch_signal(signal.SIGUSR1))  # SIG_DFL: nothing to chain
        handled = []
        signal.signal(signal.SIGUSR1, lambda signum, frame: handled.append(signum))
        print(module.watch_signal(signal.SIGUSR1), module.watch_signal(signal.SIGUSR1))
        print(module.watch_signal(signal.SIGUSR2))  # one signal at a time
        os.kill(os.getpid(), signal.SIGUSR1)
        os.kill(os.getpid(), signal.SIGUSR1)
        print(module.signal_deliveries(), handled == [signal.SIGUSR1] * 2)
        signal.signal(signal.SIGUSR1, signal.SIG_IGN)
        os.kill(os.getpid(), signal.SIGUSR1)  # the watch is gone with the handler
        print(module.signal_deliveries())
        module.die_by(signal.SIGUSR2)
    """)
    proc = subprocess.run([PYTHON, str(script)], env=clean_env(), capture_output=True, text=True)
    assert proc.returncode == -signal.SIGUSR2, proc.stderr
    assert proc.stdout.split("\n")[:5] == ["False", "True True", "False", "2 True", "2"]


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="counts threads in /proc")
def test_a_child_imports_without_a_thread_until_it_runs_repository_code_or_a_program(tmp_path):
    """A traced interpreter whose Ticker is dormant starts its sampling
    thread when repository code first runs at test time, or when it starts
    a program, whichever comes first (Sampler.start's `lazily`); its
    imports run single-threaded. A fork child that runs repository code
    starts its own thread and leaves the parent's waiting. The SIGTERM
    handler is there from the start, and the evidence is complete either
    way."""
    if trace_recorder.extension() is None:
        pytest.skip("no _recorder extension for this interpreter: the thread starts at once")
    repo = tmp_path / "repo"
    repo.mkdir()
    write(repo / "pkg.py", """
        import os

        IMPORTED = len(os.listdir("/proc/self/task"))

        def threads():
            return len(os.listdir("/proc/self/task"))
        """)
    program = """
        import os, signal, subprocess, sys
        import pkg
        print(pkg.IMPORTED, len(os.listdir("/proc/self/task")),
              signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL)
        if sys.argv[1] == "spawn":
            subprocess.run(["true"], check=True)
            print(len(os.listdir("/proc/self/task")))
        if sys.argv[1] == "fork":  # the child runs the code; the parent waits on
            read, write = os.pipe()
            pid = os.fork()
            if pid == 0:
                os.write(write, str(pkg.threads()).encode())
                os._exit(0)
            os.waitpid(pid, 0)
            print(os.read(read, 16).decode(), len(os.listdir("/proc/self/task")))
        print(pkg.threads())
        """
    results = {}
    for first in ("run", "spawn", "fork"):
        out = tmp_path / ("out-" + first)
        cmd = [PYTHON, "-m", "fastci.trace", "run", "--test-id", "t::" + first, "--out",
               str(out), "--", PYTHON, "-c", textwrap.dedent(program), first]
        proc = subprocess.run(cmd, cwd=str(repo), env=clean_env(), timeout=120,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert proc.returncode == 0, proc.stderr
        results[first] = proc.stdout.split()
        evidence = recorded(out)["t::" + first]
        assert evidence["functions"] == {"threads"}, evidence
        assert evidence["import_functions"] == {"<module>"}, evidence
        assert evidence["coverage"] == {"exact"}, evidence
    assert results == {"run": ["1", "1", "True", "2"], "spawn": ["1", "1", "True", "2", "2"],
                       "fork": ["1", "1", "True", "2", "1", "2"]}


def test_fork_child_caches_are_replaced_not_freed(tmp_path):
    """Freeing an inherited table writes to every object in it (a page copy
    each in a fork child): what a child replaces stays alive in forks."""
    from fastci.trace import forks, packages, sampler
    from fastci.trace.frames import FrameDescriber
    describer = FrameDescriber(str(tmp_path), str(tmp_path), str(tmp_path / "own"))
    describer.in_repository(test_fork_child_caches_are_replaced_not_freed.__code__)
    tables = (describer._codes, describer._repo, describer._lines, describer._frames)
    assert describer._repo
    describer.forget_codes()
    assert not describer._repo
    imports = packages.ExternalImports([str(tmp_path) + os.sep], sampler.modules_mark,
                                       sampler.modules_since)
    loaded = imports.loaded
    loaded.add("inherited")
    imports.forked()
    assert imports.loaded == set()
    kept = [id(obj) for objects in forks._KEPT for obj in objects]
    assert all(id(table) in kept for table in tables + (loaded,))


def test_the_extensions_entry_line_is_the_python_one():
    """frames._entry_line() in C (it reads the location table in place) and
    in Python name the same line for every code object of a sample of the
    standard library, and for decorated functions, lambdas and class bodies
    nested in one another; the C one refuses what is not code."""
    import argparse
    import asyncio.tasks
    import dataclasses
    import types
    from fastci.trace import frames
    entry_line = getattr(trace_recorder.extension(), "entry_line", None)
    if entry_line is None:
        pytest.skip("no _recorder extension with entry_line here")
    nested = compile(textwrap.dedent("""
        @decorator(lambda x: x,
                   other)
        def decorated(a=lambda: 1):
            '''doc'''

            def inner(): return 2
            x = [y for y in a]
            return inner

        class Body:
            @property
            def p(self): return 1
            z = 3

            class Inner:
                pass
        """), "nested.py", "exec")
    checked = 0
    for module_code in [nested] + [compile(open(m.__file__, encoding="utf-8").read(), m.__file__,
                                           "exec") for m in (argparse, asyncio.tasks, dataclasses)]:
        stack = [module_code]
        while stack:
            code = stack.pop()
            stack.extend(c for c in code.co_consts if type(c) is types.CodeType)
            assert entry_line(code) == frames._python_entry_line(code), code.co_qualname
            checked += 1
    assert checked > 300
    lines = {c.co_name: entry_line(c) for c in nested.co_consts if type(c) is types.CodeType}
    # Past its decorators, def line, nested def and comprehension; past the
    # property and its decorator.
    assert (lines["decorated"], lines["Body"]) == (9, 14)
    with pytest.raises(TypeError):
        entry_line("not code")
