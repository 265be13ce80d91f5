"""Smoke test of the evaluation harness (utils/eval, utils/demo.py).

Replays the first three MRs of the minitron history (mr03 is a regression)
with a reduced nightly run, then checks that the metrics are consistent
with one another (not their values): recall in [0, 1], run-all's recall is
1, every plan runs a subset of the suite, run-all costs the most, no
strategy catches more regressions than the full suite, and the harness's
APFDc equals the `compute-metrics` pass on the same schedule.
"""

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
BUILD = os.environ.get("FASTCI_BUILD_DIR", os.path.join(ROOT, "build"))
FASTCI_OPT = os.path.join(BUILD, "bin", "fastci-opt")
sys.path.insert(0, os.path.join(ROOT, "utils"))

from eval import metrics  # noqa: E402


@pytest.fixture(scope="module")
def summary(tmp_path_factory):
    assert os.access(FASTCI_OPT, os.X_OK), "build FastCI first (%s missing)" % FASTCI_OPT
    out = tmp_path_factory.mktemp("eval")
    proc = subprocess.run(
        [sys.executable, os.path.join(ROOT, "utils", "demo.py"), "--build-dir", BUILD,
         "--mrs", "3", "--unit", "tests/unit/test_arguments.py",
         "--unit", "tests/unit/test_model.py", "--e2e", "gpt_tp1_pp1", "--out", str(out)],
        capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "report: %s" % os.path.join(str(out), "report.md") in proc.stdout
    for name in ("report.md", "latency_cdf.svg", "gpu_hours.svg", "recall_vs_cost.svg"):
        assert os.path.getsize(os.path.join(str(out), name)) > 0
    with open(os.path.join(str(out), "results.json")) as f:
        return json.load(f)


def test_every_mr_and_strategy_is_scored(summary):
    assert [r["id"] for r in summary["per_mr"]] == ["mr01", "mr02", "mr03"]
    for row in summary["per_mr"]:
        assert set(row["strategies"]) == set(summary["strategies"])
    assert "run-all" in summary["strategies"] and "fastci-lower" in summary["strategies"]


def test_plans_are_subsets_and_run_all_costs_most(summary):
    for row in summary["per_mr"]:
        everything = set(row["strategies"]["run-all"]["selected"])
        for name, s in row["strategies"].items():
            assert set(s["selected"]) <= everything, (row["id"], name)
            assert s["gpu_hours"] <= row["strategies"]["run-all"]["gpu_hours"] + 1e-9
            assert s["latency_min"] >= 0


def test_recall_and_retention_are_shares(summary):
    affected_somewhere = False
    for row in summary["per_mr"]:
        for name, s in row["strategies"].items():
            for key in ("recall", "line_retention"):
                assert s[key] is None or 0.0 <= s[key] <= 1.0, (row["id"], name, key)
        if row["affected"]:
            affected_somewhere = True
            assert row["strategies"]["run-all"]["recall"] == 1.0
            assert row["strategies"]["run-all"]["line_retention"] == 1.0
    assert affected_somewhere, "no MR touched a traced line: the reference coverage is empty"


def test_regressions_caught_never_exceed_the_full_suite(summary):
    overall = summary["overall"]
    regressions = overall["run-all"]["regressions"]
    assert regressions >= 1  # mr03 fails unit tests of test_model.py
    assert overall["run-all"]["caught"] == regressions
    for name, o in overall.items():
        assert o["regressions"] == regressions
        assert 0 <= o["caught"] <= regressions, name


def test_apfdc_matches_the_compute_metrics_pass(summary, tmp_path):
    row = next(r for r in summary["per_mr"] if r["failing"])
    plan = row["strategies"]["run-all"]
    names = plan["selected"]
    # run-all's fleet costs: e2e jobs as declared, unit tests 1 GPU-minute.
    costs = {n: 60.0 for n in names if n.startswith("tests/")}
    module = subprocess.run(
        [FASTCI_OPT, "/dev/null", "--pass-pipeline=load-manifest{file=%s}" % os.path.join(
            ROOT, "test", "workloads", "minitron", "ci", "tests.yaml"), "--emit=json"],
        capture_output=True, text=True, check=True)
    for test in json.loads(module.stdout)["tests"]:
        costs[test["name"]] = test["cost"]["gpu_seconds"]
    tests, clock = [], 0.0
    for rank, name in enumerate(names, 1):
        tests.append({"name": name, "cost": {"gpus": 1, "seconds": costs[name],
                                             "gpu_seconds": costs[name]},
                      "attributes": {"rank": rank, "start": clock, "end": clock + costs[name]}})
        clock += costs[name]
    path = tmp_path / "scheduled.json"
    path.write_text(json.dumps({"tests": tests}))
    proc = subprocess.run(
        [FASTCI_OPT, str(path), "--pass-pipeline=compute-metrics{failing={%s}}" % ",".join(
            row["failing"]), "--emit=json"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    expected = json.loads(proc.stdout)["attributes"]["metrics_apfdc"]
    assert plan["apfdc"] == pytest.approx(expected, rel=1e-9)
    assert metrics.apfdc(names, costs, set(row["failing"])) == pytest.approx(expected, rel=1e-9)
