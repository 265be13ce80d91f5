"""Armed code objects, the exact recorder's mechanism on CPython 3.11 (arming.py).

The transform itself is checked in process (behaviour, exception tables,
location tables, generators with long jumps); the recording it enables end
to end through inner pytest sessions and the `run` wrapper: closures made
after their function was disarmed, re-arming at every test, class and
module bodies, generators resumed in a later test, the main script and fork
children.
"""

import asyncio
import dis
import os
import subprocess
import traceback
import types

import pytest

from conftest import PYTHON, clean_env, read_evidence_file, recorded, run_inner_pytest, write

from fastci.trace import arming, recorder  # noqa: E402  (conftest puts the package on sys.path)

pytestmark = [
    pytest.mark.skipif(not arming.SUPPORTED, reason="armed code is CPython 3.11's"),
    pytest.mark.skipif(recorder.extension() is None, reason="no _recorder extension built"),
]

SOURCE = """
def handled(x):
    try:
        return 10 // x
    except ZeroDivisionError:
        return -1
    finally:
        LOG.append(x)

def nested(n):
    def inner(k):
        return k + n
    return inner

def gen(n):
    total = 0
    for i in range(n):
        try:
            sent = yield i
            if sent:
                total += sent
        except ValueError:
            yield "caught"
    return total

async def coro(n):
    s = 0
    for i in range(n):
        await asyncio.sleep(0)
        s += i
    return s

def raises(x):
    y = x + 1
    raise KeyError(y)

def long_gen(n):
    for i in range(n):
""" + "".join("        if i == %d:\n            yield %d\n" % (k, k) for k in range(150))


def compiled():
    return compile(SOURCE, "/repo/mod.py", "exec")


def armed_namespace(hits):
    """Runs SOURCE with every nested code object armed; hit() appends to `hits`."""
    armer = arming.Armer(lambda disarmed: hits.append(disarmed.co_qualname), lambda c: True)
    code = compiled()
    consts = armer.armed_consts(code)
    namespace = {"LOG": [], "asyncio": asyncio}
    exec(code.replace(co_consts=consts), namespace)
    return namespace, armer


def plain_namespace():
    namespace = {"LOG": [], "asyncio": asyncio}
    exec(compiled(), namespace)
    return namespace


def test_armed_code_behaves_like_the_original_and_calls_hit():
    hits = []
    armed, _ = armed_namespace(hits)
    plain = plain_namespace()
    for ns in (armed, plain):
        ns["results"] = [ns["handled"](2), ns["handled"](0), ns["nested"](1)(2),
                         list(ns["long_gen"](200)), asyncio.run(ns["coro"](4))]
        g = ns["gen"](5)
        ns["results"].append([next(g), g.send(1), g.throw(ValueError), next(g), g.send(2)])
    assert armed["results"] == plain["results"]
    assert armed["LOG"] == plain["LOG"] == [2, 0]
    assert armed["results"][3] == list(range(150))
    # every first start and every resumption of a generator calls hit()
    assert hits.count("handled") == 2 and hits.count("nested.<locals>.inner") == 1
    assert hits.count("gen") == 4  # start, send, next, send (throw resumes no RESUME)
    assert hits.count("long_gen") == 151


def test_exception_table_and_positions_move_with_the_prologue():
    armer = arming.Armer(print, lambda c: True)
    for code in compiled().co_consts:
        if type(code) is not types.CodeType:
            continue
        armed, disarmed = armer.twins(code)
        assert disarmed.co_code == code.co_code
        original = [(i.opname, i.positions) for i in dis.get_instructions(code)]
        inserted = [(i.opname, i.positions) for i in dis.get_instructions(armed)
                    if i.positions.lineno is not None or i.opname in ("RETURN_GENERATOR",
                                                                       "POP_TOP", "NOP")]
        kept = [x for x in inserted if x[1].lineno is not None]
        assert kept == [x for x in original if x[1].lineno is not None], code.co_name
        # the same handlers, at the same instructions, covering the same ones
        def entries(c):
            ops = {i.offset: (i.opname, i.argval if i.opname != "LOAD_CONST" else None)
                   for i in dis.get_instructions(c)}
            lines = {i.offset: i.positions for i in dis.get_instructions(c)}
            return [(ops[e.target], e.depth, e.lasti,
                     sorted({lines[o] for o in range(e.start, e.end + 2, 2) if o in lines
                             and lines[o].lineno is not None}))
                    for e in dis.Bytecode(c).exception_entries]
        assert entries(armed) == entries(code), code.co_name


def test_traceback_lines_of_armed_code():
    def innermost(namespace):
        with pytest.raises(KeyError) as info:
            namespace["raises"](1)
        frame = traceback.extract_tb(info.value.__traceback__)[-1]
        return frame.lineno, frame.colno, frame.end_colno

    armed, _ = armed_namespace([])
    assert innermost(armed) == innermost(plain_namespace())
    assert innermost(armed)[0] == SOURCE.splitlines().index("    raise KeyError(y)") + 1


def test_location_table_encoder_round_trips():
    code = compiled()
    for const in code.co_consts + (code,):
        if type(const) is types.CodeType:
            table = arming._encode_locations(list(const.co_positions()), const.co_firstlineno)
            assert list(const.replace(co_linetable=table).co_positions()) == \
                list(const.co_positions())


def test_location_table_splice_matches_reencoding():
    """Splicing "no location" units into a table, splitting the entries that
    span a point, gives the positions a full re-encoding gives: for every
    code object of a few standard library modules (every location form),
    at every RESUME, at the start and end, and inside long entries."""
    import argparse
    import asyncio.tasks
    checked = split = 0
    for module in (argparse, asyncio.tasks, dis):
        with open(module.__file__, encoding="utf-8") as f:
            stack = [compile(f.read(), module.__file__, "exec")]
        while stack:
            code = stack.pop()
            stack.extend(c for c in code.co_consts if type(c) is types.CodeType)
            positions = list(code.co_positions())
            n = len(positions)
            resumes = [i.offset // 2 + 1 for i in dis.get_instructions(code)
                       if i.opname == "RESUME"]
            for points in (resumes, [0, n], list(range(1, n, 3))[:40]):
                for units in (1, 9):
                    table = recorder.extension().splice_locations(
                        code.co_linetable, points, units)
                    expected = list(positions)
                    for point in reversed(points):
                        expected[point:point] = [(None, None, None, None)] * units
                    spliced = code.replace(
                        co_code=b"\x09\x00" * len(expected), co_linetable=table)
                    assert list(spliced.co_positions()) == expected, (code.co_qualname, points)
                    checked += 1
            split += any(0 < p < n and positions[p - 1] == positions[p] for p in resumes)
    assert checked > 1000 and split > 10, (checked, split)


def test_native_transforms_reject_what_they_cannot_place():
    """native/arming.c's entry points: points out of order or negative and
    negative units are errors; a prologue of half a code unit is one; code
    with an instruction before its first RESUME comes back None (the caller
    falls back, test_unarmable_code_falls_back_to_the_hook)."""
    native = recorder.extension()
    code = compiled().co_consts[0]
    with pytest.raises(ValueError, match="ascending"):
        native.splice_locations(code.co_linetable, [3, 1], 1)
    with pytest.raises(ValueError, match="ascending"):
        native.splice_locations(code.co_linetable, [-1], 1)
    with pytest.raises(ValueError, match="units"):
        native.splice_locations(code.co_linetable, [1], -1)
    with pytest.raises(TypeError):
        native.splice_locations(code.co_linetable, 3, 1)
    with pytest.raises(ValueError, match="whole code units"):
        native.armed_code(code, code.co_consts, b"\x09")
    resume = bytes((dis.opmap["RESUME"], 0))
    odd = code.replace(co_code=code.co_code.replace(resume, bytes((dis.opmap["NOP"], 0))))
    assert native.armed_code(odd, odd.co_consts, b"\x09\x00") is None
    # Past the table's end nothing is split; the units go at the end.
    n = len(code.co_code) // 2
    assert native.splice_locations(code.co_linetable, [n + 5], 2) == \
        code.co_linetable + native.splice_locations(b"", [0], 2)


def test_jumps_that_outgrow_one_byte_get_extended_args():
    """A loop whose backward jump fits one byte until the prologues after its
    yields push it past 255 code units."""
    def extended(c):
        return [i.opname for i in dis.get_instructions(c)].count("EXTENDED_ARG")

    armer = arming.Armer(lambda disarmed: None, lambda c: True)
    for branches in range(2, 60):
        source = "def g(n):\n    for i in range(n):\n" + "".join(
            "        if i == %d:\n            yield %d\n" % (k, k) for k in range(branches))
        code = compile(source, "/repo/g.py", "exec").co_consts[0]
        armed, _ = armer.twins(code)
        if extended(code) == 0 and extended(armed) > 0:
            break
    else:
        pytest.fail("no loop needed a longer jump")
    namespace = {}
    exec(compile(source, "/repo/g.py", "exec").replace(co_consts=(armed, "g", None)), namespace)
    assert list(namespace["g"](branches + 1)) == list(range(branches))


def _instructions_without_prologues(code, armed):
    """(opname, argument, positions) of `armed`'s instructions without the
    prologues and EXTENDED_ARGs; jumps by what they target, nested code by
    qualname."""
    every = list(dis.get_instructions(armed))
    at = {x.offset: i for i, x in enumerate(every)}
    ins = [x for x in every if x.opname != "EXTENDED_ARG"]
    out = []
    i = 0
    while i < len(ins):
        x = ins[i]
        value = x.argval
        if x.opcode in dis.hasjrel:
            k = at[x.argval]
            while every[k].opname == "EXTENDED_ARG":  # a target's prefix
                k += 1
            value = (every[k].opname, every[k].positions)
        elif type(value) is types.CodeType:
            value = value.co_qualname
        out.append((x.opname, value, x.positions))
        i += 7 if x.opname == "RESUME" and armed is not code else 1
    return out


def test_stdlib_code_objects_keep_their_instructions_and_handlers():
    """Every code object of a sample of the standard library, armed: the same
    instructions at the same positions, jumps to the same instructions, the
    same exception handlers."""
    import json.encoder
    import asyncio.tasks
    import argparse
    import email.parser
    armer = arming.Armer(lambda disarmed: None, lambda c: True)
    checked = resumable = 0
    for module in (json.encoder, asyncio.tasks, argparse, email.parser, dis, traceback):
        with open(module.__file__, encoding="utf-8") as f:
            code = compile(f.read(), module.__file__, "exec")
        stack = list(code.co_consts)
        while stack:
            nested = stack.pop()
            if type(nested) is not types.CodeType:
                continue
            stack.extend(nested.co_consts)
            armed, _ = armer.twins(nested)
            assert _instructions_without_prologues(nested, armed) == \
                _instructions_without_prologues(nested, nested), nested.co_qualname
            assert [(e.depth, e.lasti) for e in dis.Bytecode(armed).exception_entries] == \
                [(e.depth, e.lasti) for e in dis.Bytecode(nested).exception_entries]
            checked += 1
            resumable += bool(nested.co_flags & arming._RESUMABLE)
    assert checked > 300 and resumable > 20, (checked, resumable)


# -- end to end ---------------------------------------------------------------

def run_tests(repo, source, *, check=True):
    write(repo / "tests" / "test_it.py", source)
    out = repo / "ev"
    proc = run_inner_pytest(repo, "--fastci-trace-out", str(out), "tests",
                            env=clean_env(PYTHONPATH=os.pathsep.join(
                                [clean_env()["PYTHONPATH"], str(repo)])))
    if check:
        assert proc.returncode == 0, proc.stdout + proc.stderr
    return recorded(out), out


@pytest.fixture
def repo(tmp_path):
    (tmp_path / "tests").mkdir()
    (tmp_path / "pkg").mkdir()
    write(tmp_path / "pkg" / "__init__.py", "")
    write(tmp_path / "pkg" / "lib.py", """
        def make(n):
            def add(k):
                return k + n
            return add

        def shared():
            return 1

        class Box:
            size = 3

            def get(self):
                return self.size

        def counter():
            yield 1
            yield tail()

        def tail():
            return 2
    """)
    return tmp_path


def test_closure_made_after_disarm_is_recorded_in_the_next_test(repo):
    found, out = run_tests(repo, """
        from pkg import lib

        KEPT = []

        def test_a():
            lib.make(1)            # disarms make: later closures come from its disarmed twin
            KEPT.append(lib.make(2))
            assert lib.shared() == 1

        def test_b():
            assert KEPT[0](1) == 3
            assert lib.shared() == 1
    """)
    a = found["tests/test_it.py::test_a"]
    b = found["tests/test_it.py::test_b"]
    assert {"make", "shared"} <= a["functions"] and "make.<locals>.add" not in a["functions"]
    # the closure's code is armed in the disarmed make; shared() is re-armed
    assert {"make.<locals>.add", "shared"} <= b["functions"], b
    assert "make" not in b["functions"]
    headers = {read_evidence_file(p).header["recorder"] for p in out.rglob("*.stacks")}
    assert headers == {"armed-code"}, headers


def test_class_and_module_bodies_are_import_time(repo):
    found, _ = run_tests(repo, """
        def test_lazy():
            import pkg.lib
            assert pkg.lib.Box().get() == 3
    """)
    lazy = found["tests/test_it.py::test_lazy"]
    assert {"<module>", "Box"} <= lazy["import_functions"], lazy
    assert {"test_lazy", "Box.get"} <= lazy["functions"], lazy
    assert "Box" not in lazy["functions"]


def test_generator_resumed_in_a_later_test(repo):
    found, _ = run_tests(repo, """
        from pkg import lib

        GEN = []

        def test_a():
            GEN.append(lib.counter())
            assert next(GEN[0]) == 1

        def test_b():
            assert next(GEN[0]) == 2
    """)
    assert "counter" in found["tests/test_it.py::test_a"]["functions"]
    assert {"counter", "tail"} <= found["tests/test_it.py::test_b"]["functions"]


def test_threads_record_without_per_thread_setup(repo):
    found, _ = run_tests(repo, """
        import threading

        from pkg import lib

        def test_thread():
            box = []
            worker = threading.Thread(target=lambda: box.append(lib.Box().get()))
            worker.start()
            worker.join()
            assert box == [3]
    """)
    assert {"Box.get", "test_thread.<locals>.<lambda>"} <= \
        found["tests/test_it.py::test_thread"]["functions"]


def test_conftest_functions_defined_before_the_recorder_starts(repo):
    write(repo / "tests" / "conftest.py", """
        import pytest

        def helper():
            return 5

        @pytest.fixture(scope="session")
        def session_value():
            yield helper()
            helper()
    """)
    found, _ = run_tests(repo, """
        from conftest import helper

        def test_a(session_value):
            assert session_value == 5

        def test_b(session_value):
            assert helper() == 5
    """)
    assert {"session_value", "helper"} <= found["tests/test_it.py::test_a"]["functions"]
    # the session fixture's teardown resumes its generator in the last test
    assert {"session_value", "helper"} <= found["tests/test_it.py::test_b"]["functions"]


def test_main_script_and_fork_child(tmp_path):
    write(tmp_path / "job.py", """
        import multiprocessing

        class Trainer:
            def step(self):
                return helper()

        def helper():
            return 1

        def in_child():
            return 2

        def make():
            return lambda: helper()

        if __name__ == "__main__":
            from fastci.trace import process
            # armed code: the hook that caught this script's start is gone
            assert process.active()._recorder.mechanism == "armed-code"
            assert not process.active()._recorder.hooked()
            Trainer().step()
            make()()
            child = multiprocessing.get_context("fork").Process(target=in_child)
            child.start()
            child.join(60)
            assert child.exitcode == 0
    """)
    cmd = [PYTHON, "-m", "fastci.trace", "run", "--test-id", "v", "--out", str(tmp_path / "o"),
           "--", PYTHON, "job.py"]
    subprocess.run(cmd, cwd=str(tmp_path), env=clean_env(), check=True)
    by_pid = {}
    for path in sorted((tmp_path / "o").rglob("*.stacks")):
        evidence = read_evidence_file(path)
        assert evidence.header["recorder"] == "armed-code", evidence.header
        entry = by_pid.setdefault(evidence.header["pid"], set())
        entry.update(f.qualname for f in evidence.functions)
    parent = [names for names in by_pid.values() if "Trainer.step" in names]
    child = [names for names in by_pid.values() if "in_child" in names]
    assert len(parent) == 1 and len(child) == 1, by_pid
    assert {"<module>", "Trainer.step", "helper", "make", "make.<locals>.<lambda>"} <= parent[0]
    assert "in_child" not in parent[0]


def test_mechanism_switch_keeps_the_hook(repo):
    write(repo / "tests" / "test_it.py", """
        from pkg import lib

        def test_a():
            assert lib.shared() == 1
    """)
    out = repo / "ev"
    proc = run_inner_pytest(repo, "--fastci-trace-out", str(out), "tests",
                            env=clean_env(PYTHONPATH=os.pathsep.join(
                                [clean_env()["PYTHONPATH"], str(repo)]),
                                FASTCI_TRACE_RECORDER_MECHANISM="eval-frame"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    headers = {read_evidence_file(p).header["recorder"] for p in out.rglob("*.stacks")}
    assert headers == {"eval-frame"}
    assert "shared" in recorded(out)["tests/test_it.py::test_a"]["functions"]


def test_functions_with_many_constants(tmp_path):
    """More than 255 constants: the prologue's LOAD_CONSTs take EXTENDED_ARG."""
    source = "def big():\n    return [%s]\n\nbig()\n" % ", ".join("str(%d)" % i for i in range(300))
    source += "def many():\n    yield [%s]\n" % ", ".join("str(%d)" % i for i in range(300, 600))
    hits = []
    armer = arming.Armer(lambda disarmed: hits.append(disarmed.co_name), lambda c: True)
    code = compile(source, "/repo/big.py", "exec")
    namespace = {}
    exec(code.replace(co_consts=armer.armed_consts(code)), namespace)
    assert namespace["big"]() == [str(i) for i in range(300)]
    assert next(namespace["many"]()) == [str(i) for i in range(300, 600)]
    assert hits == ["big", "big", "many"]


def test_unarmable_code_falls_back_to_the_hook():
    """Bytecode the transform does not expect (here: no RESUME) switches the
    process to the frame-evaluation hook, which the header then names."""
    from fastci.trace import recorder as recorder_module

    filename = "/unarmable/mod.py"
    source = "def odd():\n    return 1\n\ndef fine():\n    return odd()\n"
    code = compile(source, filename, "exec")
    resume = bytes((dis.opmap["RESUME"], 0))
    consts = tuple(c.replace(co_code=c.co_code.replace(resume, bytes((dis.opmap["NOP"], 0))))
                   if type(c) is types.CodeType and c.co_name == "odd" else c
                   for c in code.co_consts)
    code = code.replace(co_consts=consts)
    recorder = recorder_module.FunctionRecorder(lambda c: c.co_filename == filename,
                                                ["/unarmable/"])
    if not recorder.start():
        pytest.skip("no _recorder extension built")
    try:
        assert recorder.mechanism == "armed-code"
        namespace = {}
        exec(code, namespace)  # the audit hook arms it: odd() cannot be armed
        assert recorder.mechanism.startswith("eval-frame (arming failed: no RESUME")
        assert recorder.working()
        assert [c.co_name for c in recorder.take()[0]] == ["<module>"]
        recorder.reset()
        assert namespace["fine"]() == 1
        functions, _ = recorder.take()
        assert {c.co_name for c in functions} == {"fine", "odd"}
    finally:
        recorder.close(restore=True)
