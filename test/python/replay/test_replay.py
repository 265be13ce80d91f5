"""`fastci replay` on a fixture repository made here with git (fixture.py).

Checks the ground truth (affected tests from line coverage in every
process, mutants killed by covering tests), the figures' invariants, the
resume path and every bad input the harness promises one error line for.
Needs build/bin/fastci-opt (FASTCI_OPT or the build tree); skipped without.
"""

import json
import os
import shutil
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
PACKAGE = os.path.join(ROOT, "python")
sys.path.insert(0, HERE)
sys.path.insert(0, PACKAGE)

import fixture  # noqa: E402
from fastci.replay import changes, harness, mutants, strategies  # noqa: E402


def fastci_opt():
    for candidate in (os.environ.get("FASTCI_OPT"), os.path.join(ROOT, "build", "bin", "fastci-opt")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


needs_opt = pytest.mark.skipif(fastci_opt() is None, reason="fastci-opt not built")


def replay(repo, state, *extra, command=None):
    argv = [sys.executable, "-m", "fastci.cli", "replay", "--repo", repo, "--state", state,
            "--fastci-opt", fastci_opt() or "fastci-opt", *extra, "--",
            *(command or [sys.executable, "-m", "pytest", "-q", "tests"])]
    env = dict(os.environ, PYTHONPATH=PACKAGE)
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300)


def records(state):
    return {r["index"]: r for r in harness.load_records(state)[1]}


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    base = tmp_path_factory.mktemp("replay")
    repo, state = str(base / "repo"), str(base / "state")
    fixture.make(repo)
    if fastci_opt() is None:
        pytest.skip("fastci-opt not built")
    proc = replay(repo, state, "--commits", "5", "--validate-every", "2", "--refresh-every", "3")
    return repo, state, proc


@needs_opt
def test_full_replay_prints_one_table(finished):
    repo, state, proc = finished
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("repo: 5 of 5 commits")
    rows = {line.split()[0]: line for line in lines[3:8]}
    assert set(rows) == set(harness.STRATEGIES)
    # run-all and the oracle find everything by construction.
    assert "100.0 %" in rows["run-all"] and "0/5" in rows["run-all"]
    assert "100.0 %" in rows["oracle"]


@needs_opt
def test_ground_truth_per_commit(finished):
    repo, state, _ = finished
    r = records(state)
    # 1: the added branch of clamp runs in test_clamp only.
    assert r[1]["affected"] == ["tests/test_ops.py::test_clamp"]
    # 2: a comment changes nothing.
    assert r[2]["affected"] == []
    # 3: a new function nobody calls: its def line runs at import, but that
    # only binds a name.
    assert r[3]["affected"] == []
    # 4: a deleted line (and the edited test).
    assert r[4]["affected"] == ["tests/test_fmt.py::test_show"]
    # 5: calc/cli.py runs only in the test's child process.
    assert r[5]["affected"] == ["tests/test_cli.py::test_cli_in_child"]
    # Incremental reruns: the comment commit reruns the one test that ran
    # calc/extra.py, not the suite.
    assert r[2]["rerun"] == ["tests/test_extra.py::test_scale"]
    # Validation runs (commits 2 and 4) agree with the incremental truth.
    for index in (2, 4):
        assert r[index]["validation"]["affected_differs"] == []


@needs_opt
def test_mutants_are_killed_by_covering_tests(finished):
    repo, state, _ = finished
    r = records(state)
    m = r[1]["mutants"]
    assert len(m) == 1 and m[0]["path"] == "calc/ops.py" and m[0]["line"] == 8
    assert m[0]["killers"] == ["tests/test_ops.py::test_clamp"]
    # The child-process code of commit 5 is mutated and killed there.
    assert r[5]["mutants"] and all(x["covering"] == ["tests/test_cli.py::test_cli_in_child"]
                                   for x in r[5]["mutants"])
    assert all(x["killers"] for x in r[5]["mutants"])
    # The working tree is restored after every mutant and the replay.
    assert subprocess.run(["git", "-C", repo, "status", "--porcelain"], capture_output=True,
                          text=True).stdout == ""


@needs_opt
def test_import_graph_misses_child_process_code(finished):
    repo, state, _ = finished
    r = records(state)
    assert "tests/test_cli.py::test_cli_in_child" not in r[5]["selected"]["import-graph"]
    figures = harness.score(list(r.values()))
    assert 5 in figures["import-graph"]["missed"]
    assert figures["oracle"]["missed"] == [] and figures["run-all"]["missed"] == []
    for name in harness.STRATEGIES:
        assert figures[name]["cost"] <= figures["run-all"]["cost"] + 1e-9


@needs_opt
def test_rescore_fastci_on_finished_truth(finished, tmp_path):
    repo, state, proc = finished
    copy = str(tmp_path / "rescored")
    again = replay(repo, copy, "--commits", "5", "--validate-every", "2", "--refresh-every", "3",
                   "--truth", state)
    assert again.returncode == 0, again.stderr
    out = again.stdout.splitlines()
    assert "re-scored" in out[1]
    # Ground truth and baselines are the finished replay's, row for row.
    old_rows = {line.split()[0]: line for line in proc.stdout.splitlines()[3:8]}
    new_rows = {line.split()[0]: line for line in out[4:9]}
    for name in ("run-all", "file-runtime", "import-graph", "oracle"):
        assert new_rows[name] == old_rows[name]
    r = records(copy)
    assert sorted(r) == [1, 2, 3, 4, 5] and all(x["rescored"] for x in r.values())
    # PR runs under the sampler: after commit 1 only FastCI's plan (the
    # clamp test) runs, and its evidence joins the folder for commit 2 on.
    pr = str(tmp_path / "pr")
    traced = replay(repo, pr, "--commits", "5", "--validate-every", "2", "--refresh-every", "3",
                    "--truth", state, "--trace-pr-runs", "--nights", "100")
    assert traced.returncode == 0, traced.stderr
    with open(os.path.join(pr, "logs", "001-collect.log")) as f:
        assert "1 passed, 4 deselected" in f.read()
    assert records(pr)[1]["selected"]["fastci"] == ["tests/test_ops.py::test_clamp"]
    # A truth of another window is refused.
    other = replay(repo, str(tmp_path / "other"), "--commits", "4", "--truth", state)
    assert other.returncode == 2 and "another window" in other.stderr


STOPPER = """
import os, subprocess
def pytest_configure(config):
    head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    if head == os.environ.get("REPLAY_TEST_STOP_AT"):
        os._exit(3)
"""


@needs_opt
def test_resume_after_a_failed_commit(finished, tmp_path):
    repo, state, proc = finished
    plugin = tmp_path / "plugin"
    plugin.mkdir()
    (plugin / "stopper.py").write_text(STOPPER)
    fourth = subprocess.run(["git", "-C", repo, "rev-parse", "HEAD~1"], capture_output=True,
                            text=True).stdout.strip()
    copy = str(tmp_path / "state")
    command = [sys.executable, "-m", "pytest", "-q", "-p", "stopper", "tests"]
    env = dict(os.environ, PYTHONPATH=str(plugin), REPLAY_TEST_STOP_AT=fourth)
    args = [sys.executable, "-m", "fastci.cli", "replay", "--repo", repo, "--state", copy,
            "--fastci-opt", fastci_opt(), "--commits", "5", "--validate-every", "2",
            "--refresh-every", "3", "--", *command]
    env["PYTHONPATH"] += os.pathsep + PACKAGE
    first = subprocess.run(args, capture_output=True, text=True, env=env, timeout=300)
    assert first.returncode == 2
    assert "did not run pytest to its end" in first.stderr
    assert "strategy" not in first.stdout
    # The work tree is back where it was.
    assert subprocess.run(["git", "-C", repo, "status", "--porcelain"], capture_output=True,
                          text=True).stdout == ""
    # Figures cover only the commits that finished, even with a leftover record.
    shutil.copy(os.path.join(copy, "commit-003.json"), os.path.join(copy, "commit-004.json"))
    partial = subprocess.run([sys.executable, "-m", "fastci.cli", "replay", "--report", copy],
                             capture_output=True, text=True, env=env)
    assert partial.returncode == 0
    assert partial.stdout.startswith("repo: 3 of 5 commits")
    env.pop("REPLAY_TEST_STOP_AT")
    resumed = subprocess.run(args, capture_output=True, text=True, env=env, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert "resuming after commit 3 of 5" in resumed.stderr
    assert resumed.stdout.splitlines()[0] == proc.stdout.splitlines()[0]
    for index in (4, 5):
        assert records(copy)[index]["affected"] == records(state)[index]["affected"]


@needs_opt
@pytest.mark.parametrize("case", ["not-git", "window", "command", "not-pytest", "checkout",
                                  "busy"])
def test_bad_input_is_one_error_line(finished, tmp_path, case):
    repo, _, _ = finished
    state = str(tmp_path / "state")
    args, command = ["--commits", "2"], None
    if case == "not-git":
        repo = str(tmp_path)
    elif case == "window":
        args = ["--commits", "6"]
    elif case == "command":
        command = [str(tmp_path / "no-python"), "-m", "pytest", "tests"]
    elif case == "not-pytest":
        command = [sys.executable, "tests/test_ops.py"]
    elif case == "checkout":
        clone = str(tmp_path / "clone")
        subprocess.run(["git", "clone", "-q", repo, clone], check=True)
        # Another git process's lock: every checkout fails.
        open(os.path.join(clone, ".git", "index.lock"), "w").close()
        repo = clone
    elif case == "busy":
        clone = str(tmp_path / "clone")
        subprocess.run(["git", "clone", "-q", repo, clone], check=True)
        # A live replay (this process) holds the checkout.
        with open(os.path.join(clone, ".git", "fastci-replay.lock"), "w") as f:
            f.write(str(os.getpid()))
        repo = clone
    proc = replay(repo, state, *args, command=command)
    errors = [line for line in proc.stderr.splitlines() if "error" in line]
    assert proc.returncode == 2, proc.stderr
    assert len(errors) == 1 and errors[0].startswith("fastci replay: error: "), proc.stderr
    expected = {"not-git": "is not a git repository", "window": "larger than the history",
                "command": "cannot start", "not-pytest": "must run pytest",
                "checkout": "cannot check out", "busy": "another replay"}[case]
    assert expected in errors[0]
    # Nothing is reported for a replay that did not finish a commit.
    assert "strategy" not in proc.stdout


def test_targets_of_additions_and_deletions():
    old = "def f(x):\n    # note\n    y = x\n    return y\n"
    new = "def f(x):\n    y = x\n    if y:\n        y += 1\n    return y\n"
    assert changes.executable_lines(new) == {1, 2, 3, 4, 5}
    nothing = (set(), set())
    # Deleting a comment-only line targets nothing; deleting code targets it.
    assert changes._targets([(2, 2)], old) == nothing
    assert changes._targets([(3, 3)], old) == ({3}, set())
    assert changes._targets([(3, 4)], new) == ({3, 4}, set())
    # A code line with no line-table entry (`else:`) targets its neighbours.
    branchy = "if a:\n    b()\nelse:\n    c()\n"
    assert changes._targets([(3, 3)], branchy) == ({2, 4}, set())
    # A wholly added function: its body is a target, its def line is not.
    added = "x = 1\n\n\ndef g():\n    return x\n"
    assert changes._targets([(4, 5)], added) == ({5}, set())
    # A docstring edit changes nothing.
    documented = 'def g():\n    """Doc.\n\n    More.\n    """\n    return 1\n'
    assert changes._targets([(3, 4)], documented) == nothing
    # A signature change (def line or a continuation line) targets calls of
    # the function: its first line, the decorator's when decorated.
    decorated = "@deco\ndef g(a,\n      b=2):\n    return a\n"
    assert changes._targets([(3, 3)], decorated) == (set(), {1})
    assert changes._targets([(2, 2)], decorated) == (set(), {1})
    assert changes._targets([(1, 1)], decorated) == ({1}, set())
    t = changes.Targets.__new__(changes.Targets)
    t.old, t.old_calls, t.new, t.new_calls = {}, {}, {"m.py": set()}, {"m.py": {1}}
    # A test that only imported the module ran line 1 (the decorator) but
    # entered nothing; a caller's 'call' event is on line 1.
    assert t.hits(None, None, {"m.py": {1}}, {}) == []
    assert t.hits(None, None, {"m.py": {1, 4}}, {"m.py": {1}}) == ["+m.py:1(call)"]


def test_import_block_lines():
    """Module-level import statements and if/try blocks made only of them
    (the report flags misses hitting nothing else); other code is not."""
    source = ("import os\n"
              "from .utils import (\n    a,\n    b,\n)\n"
              "try:\n    from torch import X\nexcept ImportError:\n    from torch import Y as X\n"
              "if flag():\n    import json\nelse:\n    pass\n"
              "if flag():\n    import yaml\n    setup()\n"
              "def f():\n    import re\n")
    assert changes.import_block_lines(source) == set(range(1, 14))
    assert changes.import_block_lines("def (") is None


def test_mutants_operators():
    import random
    source = "def f(a, b):\n    if a < b:\n        a = b - 1\n    return 3\n"
    kinds = set()
    for seed in range(30):
        for line in (2, 3, 4):
            made = mutants.mutate(source, line, random.Random(seed))
            assert made is not None
            compile(made[1], "m", "exec")
            assert made[1] != source
            kinds.add(made[0])
    assert kinds == {"compare", "negate", "return-none", "drop", "constant"}
    assert mutants.mutate("x = 'text'\n", 1, random.Random(0))[0] == "drop"
    assert mutants.is_test_file("tests/test_a.py") and not mutants.is_test_file("pkg/a.py")


def test_expand_plan_names():
    collected = ["t/test_a.py::test_x[1]", "t/test_a.py::test_x[2]", "t/test_a.py::C::test_y",
                 "t/test_b.py::test_z"]
    selected, unknown = strategies.expand(
        ["t/test_a.py::test_x", "t/test_a.py::C", "t/test_b.py::test_z", "t/test_b.py::nope"],
        collected)
    assert selected == set(collected)
    assert unknown == ["t/test_b.py::nope"]
    assert strategies.expand(["t/test_a.py"], collected)[0] == set(collected[:3])


def _trace(root, *plugins):
    """Runs pytest on `root/tests` under the line tracer (and `plugins`,
    registered after it); returns {test id: {path: lines}}."""
    out = root / "out"
    out.mkdir()
    env = dict(os.environ, FASTCI_LINETRACE_OUT=str(out), FASTCI_LINETRACE_ROOT=str(root),
               PYTHONPATH=os.pathsep.join([PACKAGE, str(root)]))
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
               "-p", "fastci.replay.linetrace"]
    for plugin in plugins:
        command += ["-p", plugin]
    proc = subprocess.run(command + ["tests"], cwd=root, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    traced = {}
    for name in os.listdir(out):
        with open(out / name) as f:
            for entry in json.load(f):
                traced.setdefault(entry["test"], {}).update(entry["files"])
    return traced


def test_line_tracer_sees_imports_of_initial_conftests(tmp_path):
    """A conftest.py that imports the package runs its module bodies before
    pytest_configure: those lines are still `<import>` lines (a test that
    runs pkg code then hits them through Coverage.of)."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "tests").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("X = 1\n\n\ndef f():\n    return X\n")
    (tmp_path / "tests" / "conftest.py").write_text("import pkg\n")
    (tmp_path / "tests" / "test_a.py").write_text("import pkg\n\n\ndef test_f():\n    assert pkg.f() == 1\n")
    traced = _trace(tmp_path)
    assert {1, 4} <= set(traced["<import>"]["pkg/__init__.py"])
    coverage = harness.Coverage({"tests/test_a.py::test_f": {p: set(v) for p, v in
                                                              traced["tests/test_a.py::test_f"].items()}},
                                {p: set(v) for p, v in traced["<import>"].items()})
    assert 1 in coverage.of("tests/test_a.py::test_f")["pkg/__init__.py"]


def test_line_tracer_attributes_lines_under_a_rerunning_plugin(tmp_path):
    """A plugin that runs the test protocol itself and returns its result
    (flaky, pytest-rerunfailures) ends pytest_runtest_protocol's first-result
    call: the tracer still attributes the test's lines to the test, not to
    `<import>`."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "tests").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("def f():\n    return 1\n")
    (tmp_path / "rerun_plugin.py").write_text(
        "from _pytest.runner import runtestprotocol\n\n\n"
        "def pytest_runtest_protocol(item, nextitem):\n"
        "    item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)\n"
        "    runtestprotocol(item, nextitem=nextitem)\n"
        "    item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)\n"
        "    return True\n")
    (tmp_path / "tests" / "test_a.py").write_text("import pkg\n\n\ndef test_f():\n    assert pkg.f() == 1\n")
    # The rerunning plugin registered after the tracer: the later-registered
    # plain implementation is called first.
    traced = _trace(tmp_path, "rerun_plugin")
    assert 2 in traced["tests/test_a.py::test_f"]["pkg/__init__.py"]


def test_daily_refresh_collects_after_each_days_last_commit(tmp_path):
    """--refresh-every day: the nightly collect runs on the last commit of
    each UTC day (a job at midnight finds it), never after the window's end."""
    import types
    repo = str(tmp_path / "repo")
    os.makedirs(repo)
    fixture.git(repo, "init", "-q", "-b", "main")
    shas = []
    for n, when in enumerate(["2024-01-01T09:00:00Z", "2024-01-01T23:30:00Z",
                              "2024-01-02T08:00:00Z", "2024-01-04T10:00:00Z",
                              "2024-01-04T11:00:00Z"]):
        with open(os.path.join(repo, "f"), "w") as f:
            f.write(str(n))
        fixture.git(repo, "add", "f")
        subprocess.run(["git", "-C", repo, "-c", "user.name=t", "-c", "user.email=t@t",
                        "commit", "-qm", str(n)], check=True,
                       env=dict(os.environ, GIT_AUTHOR_DATE=when, GIT_COMMITTER_DATE=when))
        shas.append(subprocess.run(["git", "-C", repo, "rev-parse", "HEAD"], check=True,
                                   capture_output=True, text=True).stdout.strip())
    daily = types.SimpleNamespace(repo=repo, shas=shas,
                                  args=types.SimpleNamespace(refresh_every="day"))
    assert [harness.Replay.nightly_after(daily, i) for i in range(5)] == [
        False, True, True, False, False]
    every = types.SimpleNamespace(repo=repo, shas=shas, args=types.SimpleNamespace(refresh_every=2))
    assert [harness.Replay.nightly_after(every, i) for i in range(5)] == [
        True, False, True, False, True]
    assert harness.refresh_every("day") == "day" and harness.refresh_every("0") == 0
    for bad in ("-1", "daily", ""):
        with pytest.raises(Exception, match="number of commits or 'day'"):
            harness.refresh_every(bad)
