"""Directory verdicts handed from a traced process to the interpreters it starts.

A child would otherwise resolve and list again every directory its parent
judged (frames.FrameDescriber.verdicts_text, Sampler.export_verdicts).
"""

import os
import subprocess

from conftest import PYTHON, clean_env, write
from fastci.trace import frames
from fastci.trace.frames import FrameDescriber


def _tree(tmp_path):
    """A repository, a directory outside it with a file link into it, and
    the sampler's own directory linked from inside the repository."""
    repo, outside, own = tmp_path / "repo", tmp_path / "outside", tmp_path / "fastci"
    for d in (repo / "pkg", outside, own):
        d.mkdir(parents=True)
    for f in (repo / "pkg" / "a.py", outside / "v.py", own / "s.py"):
        f.write_text("")
    (outside / "in.py").symlink_to(repo / "pkg" / "a.py")
    (repo / "own_link").symlink_to(own, target_is_directory=True)
    files = {repo / "pkg" / "a.py": True, outside / "v.py": False, outside / "in.py": True,
             repo / "own_link" / "s.py": False, outside / "missing.py": False}
    return repo, own, {str(f): inside for f, inside in files.items()}


def test_a_child_judges_as_its_parent_without_listing_again(tmp_path, monkeypatch):
    repo, own, files = _tree(tmp_path)
    parent = FrameDescriber(str(repo), str(tmp_path), str(own))
    assert {f: parent.in_repository_file(f) for f in files} == files
    text = parent.verdicts_text()
    listed = []
    monkeypatch.setattr(frames, "_links_of", lambda d: listed.append(d) or frozenset())
    child = FrameDescriber(str(repo), str(tmp_path), str(own))
    assert child.load_verdicts(text) == parent.judged[1] == 3
    assert child.judged == parent.judged
    assert {f: child.in_repository_file(f) for f in files} == files
    assert listed == []  # every directory was the parent's
    assert child.outside == parent.outside and str(repo / "pkg") not in child.outside
    # A verdict the child made itself stands.
    assert child.load_verdicts(text) == 0


def test_verdicts_for_another_root_or_not_verdicts_at_all_are_ignored(tmp_path):
    repo, own, files = _tree(tmp_path)
    parent = FrameDescriber(str(repo), str(tmp_path), str(own))
    for f in files:
        parent.in_repository_file(f)
    text = parent.verdicts_text()
    other_root = FrameDescriber(str(tmp_path / "outside"), str(tmp_path), str(own))
    assert other_root.load_verdicts(text) == 0 and other_root.judged == (0, 0)
    other_own = FrameDescriber(str(repo), str(tmp_path), str(tmp_path))
    assert other_own.load_verdicts(text) == 0
    child = FrameDescriber(str(repo), str(tmp_path), str(own))
    for bad in ("", "fastci-verdicts 2\n" + text.split("\n", 1)[1], "garbage\n\t\n",
                text.split("\n", 1)[0] + "\n"):
        assert child.load_verdicts(bad) == 0
    # Lines it does not understand (a truncated file) are skipped.
    header = "\n".join(text.split("\n")[:3])
    assert child.load_verdicts(header + "\nJ\t/x\nJ\t/y\t2\nQ\t/z\nR\t/w\n") == 0
    assert child.judged == (0, 0)


def test_names_with_a_tab_or_newline_are_left_to_the_child(tmp_path):
    repo, own, _ = _tree(tmp_path)
    odd = repo / "odd\tdir"
    odd.mkdir()
    (odd / "m.py").write_text("")
    parent = FrameDescriber(str(repo), str(tmp_path), str(own))
    assert parent.in_repository_file(str(odd / "m.py"))
    child = FrameDescriber(str(repo), str(tmp_path), str(own))
    child.load_verdicts(parent.verdicts_text())
    assert str(odd) not in child._dir_verdicts
    assert child.in_repository_file(str(odd / "m.py"))


def test_a_traced_process_hands_its_verdicts_to_the_interpreters_it_starts(tmp_path):
    """The parent judged a directory its child never imports from; the child
    has its verdict, whether it inherits os.environ or gets an environment
    the parent copied before it judged anything (as launchers do); one
    started with an environment that is not traced is left alone. The
    evidence of the traced children is the same."""
    repo = tmp_path / "repo"
    (repo / "parent_only").mkdir(parents=True)
    (repo / "shared").mkdir()
    write(repo / "parent_only" / "p.py", "def p():\n    return 1\n")
    write(repo / "shared" / "s.py", "def s():\n    return 2\n")
    write(repo / "child.py", """
        import os, sys
        sys.path.insert(0, os.path.join(os.path.dirname(__file__), "shared"))
        from fastci.trace import process
        import s
        s.s()
        judged = process.active().describer._dir_verdicts
        print(os.path.join(os.path.dirname(__file__), "parent_only") in judged)
        """)
    write(repo / "parent.py", """
        import os, subprocess, sys
        early = dict(os.environ)  # before anything is judged here
        untraced = {k: v for k, v in early.items() if k != "FASTCI_TRACE_TEST_ID"}
        here = os.path.dirname(os.path.abspath(__file__))
        sys.path.insert(0, os.path.join(here, "parent_only"))
        import p
        p.p()
        child = [sys.executable, os.path.join(here, "child.py")]
        subprocess.run(child, check=True)
        subprocess.run(child, check=True, env=early)
        subprocess.run([sys.executable, "-c", "pass"], check=True, env=untraced)
        print(early["FASTCI_TRACE_VERDICTS"] == os.environ["FASTCI_TRACE_VERDICTS"],
              "FASTCI_TRACE_VERDICTS" in untraced)
        print(os.path.isfile(os.environ["FASTCI_TRACE_VERDICTS"]))
        """)
    out = tmp_path / "out"
    cmd = [PYTHON, "-m", "fastci.trace", "run", "--test-id", "t", "--out", str(out), "--",
           PYTHON, str(repo / "parent.py")]
    proc = subprocess.run(cmd, cwd=str(repo), env=clean_env(), timeout=120,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["True", "True", "True", "False", "True"], proc.stdout + proc.stderr
    assert os.listdir(str(out / "_verdicts"))  # beside the evidence, not in a test's folder
    functions = []
    for root, _, names in os.walk(str(out)):
        for name in sorted(names):
            if name.endswith(".stacks"):
                with open(os.path.join(root, name)) as f:
                    functions.append(sorted(line for line in f if line.startswith("@f")))
    children = [f for f in functions if f == ["@f child.py:<module>:0\n", "@f shared/s.py:s:2\n"]]
    assert len(children) == 2, functions
