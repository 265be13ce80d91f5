"""Evidence format: encoding round-trips, strict located parsing, py-spy input, qualnames."""

import os
import subprocess
import sys

import pytest

from conftest import PYTHON, PACKAGE_ROOT, clean_env, load_out, other_pythons, write
from fastci.trace import evidence
from fastci.trace.evidence import EvidenceError, Frame, parse_evidence, parse_pyspy_raw
from fastci.trace.qualnames import index_file as _index_file


@pytest.mark.parametrize("text", ["plain", "a b;c%d\ne\rf", "%3B literal", "", "ünï cødé ;"])
def test_percent_encoding_round_trips(text):
    assert evidence.decode(evidence.encode(text)) == text
    assert evidence.decode(evidence.encode_qualname(text + ":x")) == text + ":x"
    for forbidden in "; \n\r":
        assert forbidden not in evidence.encode(text)
    assert ":" not in evidence.encode_qualname("a:b")


def test_render_parse_round_trip_with_hostile_names():
    frames = [Frame("dir with space/a;b.py", "C.m:odd%name", 12),
              Frame("/abs/x.py", "<module>", 1), Frame("<frozen importlib._bootstrap>", "f", 0)]
    line = ";".join(evidence.encode_frame(*f) for f in frames)
    header = {"test-id": "t::x[a b;c]", "samples": 3}
    text = evidence.render(header, {line: 3, evidence.encode_frame("b.py", "g", 2): 1})
    parsed_header, stacks = parse_evidence(text)
    assert parsed_header["test-id"] == "t::x[a b;c]"
    assert parsed_header["fastci-evidence"] == "2"
    assert stacks == {tuple(frames): 3, (Frame("b.py", "g", 2),): 1}
    body = [l for l in text.splitlines() if not l.startswith("#")]
    assert body == sorted(body)


@pytest.mark.parametrize("text,line,message", [
    ("# fastci-evidence: 3\n", 1, "first line must be"),
    ("# fastci-evidence: 1\na.py:f:1 x\n", 2, "count 'x' is not"),
    ("# fastci-evidence: 1\na.py:f:1\n", 2, "expected 'stack count'"),
    ("# fastci-evidence: 1\na.py:f:one 2\n", 2, "non-numeric line"),
    ("# fastci-evidence: 1\n# pid: 1\nf:1 2\n", 3, "is not path:qualname:line"),
    ("# fastci-evidence: 1\na.py:f:1 2\n# late: 1\n", 3, "header line after stack lines"),
    ("", 1, "empty file"),
])
def test_bad_input_is_located(text, line, message):
    with pytest.raises(EvidenceError) as e:
        parse_evidence(text, "ev.stacks")
    assert str(e.value).startswith("ev.stacks:%d: " % line)
    assert message in str(e.value)


def test_written_file_has_every_header_key(tmp_path, spin_module):
    write(tmp_path / "job.py", "import spinlib\nspinlib.spin(0.2)\n")
    cmd = [PYTHON, "-m", "fastci.trace", "run", "--test-id", "k", "--out", str(tmp_path / "o"),
           "--", PYTHON, "job.py"]
    subprocess.run(cmd, cwd=str(tmp_path), env=clean_env(), check=True)
    (path, header, stacks), = load_out(tmp_path / "o")
    with open(str(path), encoding="utf-8") as f:
        keys = [line[2:].split(":")[0] for line in f if line.startswith("# ")]
    assert keys[0] == "fastci-evidence"
    assert keys[1:len(evidence.HEADER_KEYS) + 1] == list(evidence.HEADER_KEYS)
    assert header["python"] == "%d.%d.%d" % sys.version_info[:3]
    assert int(header["pid"]) > 0 and float(header["wall-seconds"]) >= 0.2
    assert (Frame("spinlib.py", "spin", 7) in {f for s in stacks for f in s})
    show = subprocess.run([PYTHON, "-m", "fastci.trace", "show", str(path)], env=clean_env(),
                          stdout=subprocess.PIPE, universal_newlines=True)
    assert show.returncode == 0 and "test-id=k" in show.stdout


def test_show_rejects_corrupt_file(tmp_path):
    bad = tmp_path / "bad.stacks"
    bad.write_text("# fastci-evidence: 1\nnot a stack\n")
    proc = subprocess.run([PYTHON, "-m", "fastci.trace", "show", str(bad)], env=clean_env(),
                          stderr=subprocess.PIPE, universal_newlines=True)
    assert proc.returncode == 1
    assert proc.stderr.startswith("%s:2: " % bad)


def test_pyspy_raw_is_read():
    text = ('process 12:"python t.py";thread (0x7F01);<module> (t.py:9);'
            'train (/src/m.py:40) 7\nmain (t.py) 2\n\n')
    assert parse_pyspy_raw(text) == {
        (Frame("t.py", "<module>", 9), Frame("/src/m.py", "train", 40)): 7,
        (Frame("t.py", "main", 0),): 2,
    }
    with pytest.raises(EvidenceError, match=r"^spy.txt:1: frame 'oops' is not"):
        parse_pyspy_raw("oops 3\n", "spy.txt")


QUALNAME_SOURCE = '''
import functools

def top():
    def inner():
        return [x for x in range(2)]
    return inner

class Outer:
    @functools.lru_cache()
    @staticmethod
    def decorated():
        pass

    class Nested:
        def method(self):
            f = lambda: {k: k for k in range(1)}
            return f

async def coro():
    pass
'''


def test_reconstructed_qualnames_match_cpython(tmp_path):
    """The pre-3.11 reconstruction must agree with co_qualname wherever that exists."""
    if sys.version_info < (3, 11):
        pytest.skip("needs co_qualname as the reference")
    path = write(tmp_path / "mod.py", QUALNAME_SOURCE)
    index = _index_file(str(path))
    codes, todo = [], [compile(path.read_text(), str(path), "exec")]
    while todo:
        code = todo.pop()
        codes.append(code)
        todo.extend(c for c in code.co_consts if hasattr(c, "co_qualname"))
    checked = 0
    for code in codes:
        if code.co_name == "<module>":
            continue
        assert index[(code.co_firstlineno, code.co_name)] == code.co_qualname
        checked += 1
    assert checked >= 9


@pytest.mark.parametrize("python", other_pythons() or [pytest.param(None, marks=pytest.mark.skip(
    reason="no other CPython 3.9+ interpreters installed"))])
def test_child_on_other_cpython_versions(tmp_path, spin_module, python):
    """Children may run any CPython >= 3.9; methods keep Class.method names there too."""
    write(tmp_path / "job.py", """
        import spinlib

        class Trainer:
            def step(self):
                spinlib.spin(0.3)

        Trainer().step()
    """)
    cmd = [PYTHON, "-m", "fastci.trace", "run", "--test-id", "v", "--out", str(tmp_path / "o"),
           "--", python, "job.py"]
    subprocess.run(cmd, cwd=str(tmp_path), env=clean_env(), check=True)
    (_, header, stacks), = load_out(tmp_path / "o")
    assert header["python"].startswith(os.path.basename(python)[6:])
    frames = {f for s in stacks for f in s}
    assert Frame("job.py", "Trainer.step", 6) in frames, frames


def test_existing_sitecustomize_still_runs(tmp_path, spin_module):
    other = tmp_path / "site"
    other.mkdir()
    write(other / "sitecustomize.py", "import os\nos.environ['MARK'] = 'ran'\n")
    write(tmp_path / "job.py", "import os, spinlib\nspinlib.spin(0.1)\nprint(os.environ.get('MARK'))\n")
    hook = os.path.join(str(PACKAGE_ROOT), "fastci", "trace", "_hook")
    env = clean_env(FASTCI_TRACE_TEST_ID="s", FASTCI_TRACE_OUT=str(tmp_path / "o"),
                    PYTHONPATH=os.pathsep.join([hook, str(other)]))
    proc = subprocess.run([PYTHON, "job.py"], cwd=str(tmp_path), env=env,
                          stdout=subprocess.PIPE, universal_newlines=True)
    assert proc.stdout.strip() == "ran"
    assert len(load_out(tmp_path / "o")) == 1
