"""End to end through the `fastci` driver on a tiny git repository.

collect (evidence under the sampler) -> change one function -> plan (only
the affected test runs) -> run (JUnit, exit status) -> observe-mode plan and
audit (a failure in a test the plan would have skipped is reported). Also
the fail-safe plan without evidence and the driver's input errors. Needs a
built tree: FASTCI_BUILD_DIR (as utils/run-tests.sh sets it) or build/.
"""

import json
import os
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
BUILD = Path(os.environ.get("FASTCI_BUILD_DIR", ROOT / "build")).resolve()
FASTCI = BUILD / "bin" / "fastci"
PYTHON = sys.executable

pytestmark = pytest.mark.skipif(
    not FASTCI.exists(), reason="fastci is not built (set FASTCI_BUILD_DIR)")

SPIN = """
import time


def spin(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass
"""


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))


def git(repo, *args):
    subprocess.run(["git", "-C", str(repo), *args], check=True,
                   stdout=subprocess.DEVNULL)


def fastci(*args, cwd, env=None, expect=0):
    proc = subprocess.run([PYTHON, str(FASTCI), *map(str, args)], cwd=str(cwd),
                          env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True,
                          timeout=120)
    assert proc.returncode == expect, proc.stdout + proc.stderr
    return proc


@pytest.fixture
def repo(tmp_path):
    """Two modules, each with a test that spins in it long enough to sample."""
    repo = tmp_path / "repo"
    write(repo / "pkg" / "__init__.py", "")
    write(repo / "pkg" / "spin.py", SPIN)
    write(repo / "pkg" / "alpha.py", """
        from pkg.spin import spin


        def alpha():
            spin(0.3)
            return 1
    """)
    write(repo / "pkg" / "beta.py", """
        from pkg.spin import spin


        def beta():
            spin(0.3)
            return 2
    """)
    write(repo / "tests" / "test_alpha.py", """
        import os

        from pkg.alpha import alpha


        def test_alpha():
            assert alpha() == 1
            assert "FASTCI_BREAK_ALPHA" not in os.environ
    """)
    write(repo / "tests" / "test_beta.py", """
        from pkg.beta import beta


        def test_beta():
            assert beta() == 2
    """)
    write(repo / "pytest.ini", "[pytest]\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q",
        "--allow-empty", "-m", "empty")
    git(repo, "add", ".")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q",
        "-m", "base")
    return repo


def environment(**extra):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("FASTCI_TRACE_")}
    env["FASTCI_TRACE_RATE"] = "200"
    env.update(extra)
    return env


def junit_results(path):
    root = ElementTree.parse(str(path)).getroot()
    return {case.get("name"): ("fail" if case.find("failure") is not None
                               else "skip" if case.find("skipped") is not None
                               else "pass")
            for case in root.iter("testcase")}


def test_collect_change_plan_run_audit(repo, tmp_path):
    evidence = tmp_path / "evidence"
    collected = fastci("collect", "--out", evidence, "--nights", 1, "--",
                       PYTHON, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                       "tests", cwd=repo, env=environment())
    assert "running: " in collected.stderr
    nights = [p.name for p in evidence.iterdir() if p.name.startswith("night-")]
    assert len(nights) == 1
    assert list((evidence / nights[0]).rglob("*.stacks"))
    assert list(evidence.glob("snapshot-*.fir"))

    # Break beta and commit: only test_beta reaches the change.
    write(repo / "pkg" / "beta.py", """
        from pkg.spin import spin


        def beta():
            spin(0.3)
            return 3
    """)
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q",
        "-am", "break beta")

    plan_file = tmp_path / "plan.json"
    planned = fastci("plan", "--repo", repo, "--base", "HEAD~1", "--evidence",
                     evidence, "-o", plan_file, "--python", PYTHON, cwd=repo,
                     env=environment())
    # The driver expands the one standard pipeline, fastci-default.
    assert "--pass-pipeline=fastci-default{root=" in planned.stderr
    plan = json.loads(plan_file.read_text())
    assert plan["schema"] == "fastci-plan/1"
    assert [t["name"] for t in plan["tests"]] == ["tests/test_beta.py::test_beta"]
    assert [t["name"] for t in plan["skipped"]] == ["tests/test_alpha.py::test_alpha"]

    results = tmp_path / "results.xml"
    trace = tmp_path / "trace"
    ran = fastci("run", plan_file, "--junit", results, "--cwd", repo,
                 "--trace", trace, cwd=repo, env=environment(), expect=1)
    assert list(trace.rglob("*.stacks")), "--trace recorded no evidence"
    assert "[1/1] tests/test_beta.py::test_beta" in ran.stdout
    assert "0 passed, 1 failed" in ran.stdout
    assert junit_results(results) == {"tests/test_beta.py::test_beta": "fail"}
    # The failure was in a test the plan ran: nothing missed.
    audited = fastci("audit", "--plan", plan_file, "--junit", results, cwd=repo)
    assert "1 failures caught by the plan, 0 missed" in audited.stdout

    # Observation mode runs everything; alpha now fails for a reason the
    # change does not explain, and the audit says the plan would miss it.
    observe_file = tmp_path / "observe.json"
    fastci("plan", "--repo", repo, "--base", "HEAD~1", "--evidence", evidence,
           "-o", observe_file, "--python", PYTHON, "--observe", cwd=repo,
           env=environment())
    observed = tmp_path / "observed.xml"
    fastci("run", observe_file, "--junit", observed, "--cwd", repo, cwd=repo,
           env=environment(FASTCI_BREAK_ALPHA="1"), expect=1)
    assert junit_results(observed) == {"tests/test_beta.py::test_beta": "fail",
                                       "tests/test_alpha.py::test_alpha": "fail"}
    audit = fastci("audit", "--plan", observe_file, "--junit", observed,
                   cwd=repo, expect=1)
    assert "MISSED tests/test_alpha.py::test_alpha: the plan skipped" in audit.stdout
    assert "1 failures caught by the plan, 1 missed" in audit.stdout

    # A second night, collected by running a plan's tests traced: with
    # --nights 1 the first night and its revision's snapshot are dropped.
    first_night = nights[0]
    fastci("collect", "--out", evidence, "--nights", 1, "--plan", observe_file,
           "--keep-going", cwd=repo, env=environment())
    nights = [p.name for p in evidence.iterdir() if p.name.startswith("night-")]
    assert len(nights) == 1 and nights[0] != first_night
    assert list((evidence / nights[0]).rglob("*.stacks"))
    head = subprocess.check_output(["git", "-C", str(repo), "rev-parse", "HEAD"],
                                   universal_newlines=True).strip()
    assert [p.name for p in evidence.glob("snapshot-*.fir")] == [
        "snapshot-%s.fir" % head]


def test_plan_without_evidence_is_fail_safe(repo, tmp_path):
    plan_file = tmp_path / "plan.json"
    planned = fastci("plan", "--repo", repo, "--base", "HEAD~1", "--evidence",
                     tmp_path / "none", "--history", tmp_path / "none",
                     "-o", plan_file, cwd=repo)
    assert "planning without history" in planned.stderr
    plan = json.loads(plan_file.read_text())
    assert sorted(t["name"] for t in plan["tests"]) == [
        "tests/test_alpha.py::test_alpha", "tests/test_beta.py::test_beta"]
    assert all(t["rule"] and t["reason"] for t in plan["tests"])
    assert plan["skipped"] == [] and plan["pruned"] == []


@pytest.mark.parametrize("content, message", [
    (None, "cannot read plan"),
    ("{", "malformed plan JSON"),
    ('{"schema": "other/1"}', "not a FastCI plan"),
    ('{"schema": "fastci-plan/1", "tests": [{"name": "t", "argv": []}]}',
     "\"argv\" must be a non-empty list of strings"),
])
def test_run_rejects_bad_plans(tmp_path, content, message):
    plan_file = tmp_path / "plan.json"
    if content is not None:
        plan_file.write_text(content)
    proc = fastci("run", plan_file, cwd=tmp_path, expect=2)
    assert proc.stderr.startswith("fastci: error: ")
    assert message in proc.stderr


def test_audit_rejects_unknown_tests(tmp_path):
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(json.dumps({"schema": "fastci-plan/1", "tests": [],
                                     "skipped": [], "pruned": []}))
    results = tmp_path / "results.xml"
    results.write_text('<testsuite><testcase classname="fastci" name="ghost">'
                       '<failure/></testcase></testsuite>')
    proc = fastci("audit", "--plan", plan_file, "--junit", results,
                  cwd=tmp_path, expect=2)
    assert "1 tests are not in the plan, e.g. 'ghost'" in proc.stderr
    fastci("audit", "--plan", plan_file, "--junit", results, "--allow-unknown",
           cwd=tmp_path)


def plan_json(tmp_path, tests):
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(json.dumps({"schema": "fastci-plan/1", "tests": tests,
                                     "skipped": [], "pruned": []}))
    return plan_file


def pytest_item(name):
    return {"name": name, "argv": [PYTHON, "-m", "pytest", "-q", "-p",
                                   "no:cacheprovider", name]}


def test_run_reports_uncollectable_ids_as_a_plan_error(repo, tmp_path):
    plan_file = plan_json(tmp_path, [
        pytest_item("tests/test_alpha.py::test_alpha"),
        pytest_item("tests/test_alpha.py::test_gone"),
        pytest_item("tests/test_missing.py::test_x")])
    results = tmp_path / "results.xml"
    ran = fastci("run", plan_file, "--junit", results, "--cwd", repo, cwd=repo,
                 env=environment(), expect=3)
    assert "1 passed, 0 failed, 2 not run" in ran.stdout
    assert "FAILED" not in ran.stdout
    # One error naming both ids and what pytest said, not two red tests.
    assert ran.stderr.count("fastci: error: plan error:") == 1
    assert "2 planned tests cannot be collected" in ran.stderr
    assert "tests/test_alpha.py::test_gone (pytest exit 4, usage error: " \
        "ERROR: not found:" in ran.stderr
    assert "tests/test_missing.py::test_x (pytest exit 4" in ran.stderr
    assert junit_results(results) == {
        "tests/test_alpha.py::test_alpha": "pass",
        "tests/test_alpha.py::test_gone": "skip",
        "tests/test_missing.py::test_x": "skip"}


def test_run_failure_wins_over_plan_error(repo, tmp_path):
    empty = repo / "tests" / "test_empty.py"
    empty.write_text("")
    plan_file = plan_json(tmp_path, [pytest_item("tests/test_empty.py"),
                                     {"name": "job", "argv": ["false"]}])
    ran = fastci("run", plan_file, "--cwd", repo, cwd=repo, env=environment(),
                 expect=1)
    assert "FAILED job" in ran.stdout
    assert "tests/test_empty.py (pytest exit 5, no tests collected" in ran.stderr


def test_plan_explain_change_policy_and_python(repo, tmp_path):
    evidence = tmp_path / "evidence"
    fastci("collect", "--out", evidence, "--nights", 1, "--", PYTHON, "-m",
           "pytest", "-q", "-p", "no:cacheprovider", "tests", cwd=repo,
           env=environment())
    write(repo / "pkg" / "beta.py", """
        from pkg.spin import spin


        def beta():
            spin(0.3)
            return 3
    """)
    write(repo / "notes.unknown", "a file no policy rule matches\n")
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q",
        "-m", "change beta, add notes")
    plan_file = tmp_path / "plan.json"
    planned = fastci("plan", "--repo", repo, "--base", "HEAD~1", "--evidence",
                     evidence, "-o", plan_file, "--explain",
                     "tests/test_beta.py::test_beta", "--explain",
                     "tests/test_alpha.py::test_alpha", cwd=repo,
                     env=environment())
    # The built-in policy selects everything for a path no rule matches.
    assert "tests/test_alpha.py::test_alpha: selected (rule policy-all)" \
        in planned.stdout
    # A policy that ignores it: only beta runs, and alpha says why not.
    policy = tmp_path / "policy.yaml"
    policy.write_text(textwrap.dedent("""
        rules:
          - match: ["*.py"]
            category: python
            action: python
          - match: ["*.unknown"]
            category: notes
            action: ignore
    """))
    planned = fastci("plan", "--repo", repo, "--base", "HEAD~1", "--evidence",
                     evidence, "-o", plan_file, "--change-policy", policy,
                     "--python", "/opt/other/python", "--explain",
                     "tests/test_beta.py::test_beta", "--explain",
                     "tests/test_alpha.py::test_alpha", cwd=repo,
                     env=environment())
    assert "change-policy=%s" % policy in planned.stderr
    lines = planned.stdout.splitlines()
    assert lines[0].startswith("tests/test_beta.py::test_beta: selected (rule ")
    assert any(line.startswith("tests/test_alpha.py::test_alpha: not selected "
                               "(rule unaffected): ") for line in lines)
    plan = json.loads(plan_file.read_text())
    assert [t["name"] for t in plan["tests"]] == ["tests/test_beta.py::test_beta"]
    assert plan["tests"][0]["argv"][0] == "/opt/other/python"

    # --parse-cache keeps the parse: the same plan, and a cache to reuse.
    cache = tmp_path / "parse-cache"
    for _ in range(2):
        cached = fastci("plan", "--repo", repo, "--base", "HEAD~1", "--evidence",
                        evidence, "-o", plan_file, "--change-policy", policy,
                        "--python", "/opt/other/python", "--parse-cache", cache,
                        cwd=repo, env=environment())
        assert "parse-cache=%s" % cache in cached.stderr
        assert json.loads(plan_file.read_text()) == plan
    assert cache.is_dir() and any(cache.iterdir())

    missing = fastci("plan", "--repo", repo, "--base", "HEAD~1", "-o", plan_file,
                     "--explain", "test_alpha", cwd=repo, env=environment(),
                     expect=2)
    assert "no test 'test_alpha' in the module (did you mean " \
        "tests/test_alpha.py::test_alpha?)" in missing.stderr
    bad = fastci("plan", "--repo", repo, "--base", "HEAD~1", "-o", plan_file,
                 "--change-policy", tmp_path / "nope.yaml", cwd=repo, expect=2)
    assert "change policy" in bad.stderr and "does not exist" in bad.stderr


def test_explain_pruned_test_names_its_witnesses():
    sys.path.insert(0, str(ROOT / "python"))
    from fastci.cli import DriverError, explain_test
    module = {"tests": [
        {"name": "gpt_tp2_copy", "attributes": {
            "selected": True, "pruned": True, "rule": "executes",
            "reason": "its evidence runs changed @\"pkg.a.f\"",
            "pruned_by": [{"$symbol": "gpt_tp2"}],
            "witnesses": {"pkg.a.f": {"$symbol": "gpt_tp2"}},
            "evidence": "fresh"}},
        {"name": "unplanned", "attributes": {}}]}
    text = explain_test(module, "gpt_tp2_copy").splitlines()
    assert text == [
        "gpt_tp2_copy: pruned (selected by rule executes: its evidence runs "
        "changed @\"pkg.a.f\")",
        "  covered by: gpt_tp2",
        "  witness: pkg.a.f is run by gpt_tp2",
        "  evidence: fresh"]
    assert explain_test(module, "unplanned") == "unplanned: selection did not run"
    with pytest.raises(DriverError, match="no test 'gpt'"):
        explain_test(module, "gpt")
