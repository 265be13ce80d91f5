"""Unit tests of the evaluation harness's pure pieces: APFDc, the runner-pool
simulation, GitHub Actions path globs and the diff line mapping."""

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(ROOT, "utils"))

from eval import metrics, strategies, workspace  # noqa: E402


def test_apfdc_is_apfd_for_unit_costs():
    # APFD = 1 - sum(TF) / (n m) + 1 / (2 n): faults first revealed by tests 2 and 3 of 3.
    apfd = 1 - (2 + 3) / (3 * 2) + 1 / (2 * 3)
    costs = {"a": 1.0, "b": 1.0, "c": 1.0}
    assert metrics.apfdc(["a", "b", "c"], costs, {"b", "c"}) == pytest.approx(apfd)


def test_apfdc_missed_and_undetected_faults_count_zero():
    costs = {"a": 10.0, "b": 20.0}
    assert metrics.apfdc(["a", "b"], costs, {"b"}) == pytest.approx(10 / 30)
    assert metrics.apfdc(["a", "b"], costs, {"b", "c"}) == pytest.approx(5 / 30)
    assert metrics.apfdc(["a", "b"], costs, {"b"}, undetected={"b"}) == 0.0
    assert metrics.apfdc(["a"], costs, set()) is None


def _plan(tests):
    return strategies.Plan("p", list(tests), dict(tests))


def test_latency_queues_behind_earlier_mrs():
    # One 8-GPU runner; each MR runs one 8-GPU, 60 s job; MRs arrive every 30 s.
    plans = [_plan({"t": (8, 60.0)}) for _ in range(3)]
    assert metrics.simulate_latency([0, 30, 60], plans, 1, 8) == [60.0, 90.0, 120.0]


def test_latency_packs_narrow_jobs_on_one_runner():
    plan = _plan({"a": (4, 60.0), "b": (4, 60.0), "c": (8, 10.0)})
    assert metrics.simulate_latency([0], [plan], 1, 8) == [70.0]
    assert metrics.simulate_latency([0], [_plan({})], 1, 8) == [0.0]


def test_github_paths_last_match_wins():
    patterns = ["**/*.py", "!tests/**", "tests/unit/keep.py"]
    assert strategies._included("minitron/a/b.py", patterns)
    assert not strategies._included("tests/unit/x.py", patterns)
    assert strategies._included("tests/unit/keep.py", patterns)
    assert not strategies._included("README.md", patterns)
    assert strategies._included("setup.py", ["**/*.py"])
    assert not strategies._included("a/b.py", ["*.py"])


def test_changed_lines_and_line_map(tmp_path):
    workload = tmp_path / "w"
    (workload / "history").mkdir(parents=True)
    (workload / "f.py").write_text("".join("line%d\n" % i for i in range(1, 11)))
    patch = workload / "history" / "p.patch"
    lines = ["line%d\n" % i for i in range(1, 11)]
    lines[2] = "changed3\n"        # replace line 3
    lines.insert(6, "inserted\n")  # insert after old line 6
    new = tmp_path / "new.py"
    new.write_text("".join(lines))
    diff = subprocess.run(["git", "diff", "--no-index", "--", str(workload / "f.py"), str(new)],
                          capture_output=True, text=True).stdout
    header = "--- a/f.py\n+++ b/f.py\n"
    patch.write_text(header + diff.split("+++ ", 1)[1].split("\n", 1)[1])
    repo = workspace.ScratchRepo(str(workload), str(tmp_path))
    try:
        base = repo.head()
        head = repo.apply_mr({"id": "m", "patch": "p.patch", "merged": True})
        assert repo.changed_lines(base, head) == {"f.py": {3, 6, 7}}
        repo.finish_mr({"merged": True})
        back = repo.line_map(base, head, "f.py")
        assert [back(n) for n in (1, 3, 6, 7, 8, 11)] == [1, None, 6, None, 7, 10]
    finally:
        repo.cleanup()


def test_changed_lines_ignore_hunks_without_code(tmp_path):
    """A comment, blank line or docstring added or removed cannot change
    behaviour: such a hunk touches no line (the demo's mr01 and mr17), while
    code inserted in the same file still touches its neighbours."""
    workload = tmp_path / "w"
    (workload / "history").mkdir(parents=True)
    old = ["def f(x):\n", "    y = x + 1\n", "    return y\n", "\n", "def g():\n",
           "    # old comment\n", "    return 2\n"]
    (workload / "f.py").write_text("".join(old))
    new = list(old)
    new[5] = "    # reworded comment\n"               # comment replaced
    new.insert(5, "    \"\"\"Two.\"\"\"\n")            # docstring added to g
    new.insert(3, "\n")                               # blank line added
    new.insert(2, "    y = y * 2\n")                  # code inserted in f
    (tmp_path / "new.py").write_text("".join(new))
    diff = subprocess.run(["git", "diff", "--no-index", "--", str(workload / "f.py"),
                           str(tmp_path / "new.py")], capture_output=True, text=True).stdout
    patch = workload / "history" / "p.patch"
    patch.write_text("--- a/f.py\n+++ b/f.py\n" + diff.split("+++ ", 1)[1].split("\n", 1)[1])
    repo = workspace.ScratchRepo(str(workload), str(tmp_path))
    try:
        base = repo.head()
        head = repo.apply_mr({"id": "m", "patch": "p.patch", "merged": True})
        assert repo.changed_lines(base, head) == {"f.py": {2, 3}}
    finally:
        repo.cleanup()
