"""Running the workload's tests: the nightly evidence run and the full suite.

The nightly run is what a real project would schedule once a day: the unit
suite under pytest with the fastci_trace sampler (evidence) and the
line tracer (the evaluation's reference coverage) loaded together, and each
e2e job under `python -m fastci.trace run`. Outcomes and wall times are
kept, so the first history record of every test comes from it.
"""

import json
import os
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

UTILS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The `fastci` package (the sampler) of the same checkout.
PACKAGE_ROOT = os.path.join(os.path.dirname(UTILS), "python")
E2E_RUNNER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "e2e_runner.py")


def _python_env(extra_path=()):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([*extra_path, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


def read_junit(path, tree):
    """{node id: (outcome, seconds)} from a pytest --junitxml report of `tree`."""
    results = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        classname, name = case.get("classname", ""), case.get("name", "")
        parts = classname.split(".")
        # pytest writes tests/unit/test_x.py::C::t as classname tests.unit.test_x.C.
        for cut in range(len(parts), 0, -1):
            candidate = "/".join(parts[:cut]) + ".py"
            if os.path.isfile(os.path.join(tree, candidate)):
                node = "::".join([candidate, *parts[cut:], name])
                break
        else:
            node = name
        outcome = "pass"
        if case.find("error") is not None:
            outcome = "error"
        elif case.find("failure") is not None:
            outcome = "fail"
        elif case.find("skipped") is not None:
            outcome = "skip"
        results[node] = (outcome, float(case.get("time", "0")))
    return results


def run_unit_suite(tree, workdir, evidence_dir=None, linetrace_dir=None, paths=None):
    """Runs tests/unit (or `paths` in it); returns {node id: (outcome, seconds)}."""
    junit = os.path.join(workdir, "unit-junit.xml")
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
           "--junitxml", junit, *(paths or ["tests/unit"])]
    env = _python_env([UTILS, PACKAGE_ROOT])
    if evidence_dir:
        cmd[3:3] = ["-p", "fastci.trace.pytest_plugin", "--fastci-collect=" + evidence_dir]
    if linetrace_dir:
        cmd[3:3] = ["-p", "fastci.replay.linetrace"]
        env["FASTCI_LINETRACE_OUT"] = linetrace_dir
        env["FASTCI_LINETRACE_ROOT"] = tree
    proc = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True, timeout=3600)
    if not os.path.exists(junit):
        raise RuntimeError("unit suite did not run (exit %d):\n%s" % (
            proc.returncode, (proc.stdout + proc.stderr)[-3000:]))
    return read_junit(junit, tree)


def e2e_ids(tree):
    """Ids of the tree's own manifest, in order (the runner lists them)."""
    out = subprocess.run([sys.executable, E2E_RUNNER, "--list"], cwd=tree,
                         capture_output=True, text=True, check=True).stdout
    return out.split()


def run_e2e(tree, test_id, workdir, evidence_dir=None, overrides=(), steps=None,
            reference=None, record=None):
    """Runs one e2e test; returns {"passed", "wall_s", "problems"}.

    `reference` compares with losses recorded earlier instead of the tree's
    goldens (lowered runs); `record` saves this run's losses there."""
    out = os.path.join(workdir, "e2e-%s-%d.json" % (test_id, time.monotonic_ns()))
    cmd = [sys.executable, E2E_RUNNER, test_id, "--json-out", out]
    for flag, value in overrides:
        cmd.append("--override=%s=%s" % (flag, value))
    if steps:
        cmd += ["--steps", str(steps)]
    if reference:
        cmd += ["--reference", reference]
    if record:
        cmd += ["--record", record]
    if evidence_dir:
        cmd = [sys.executable, "-m", "fastci.trace", "run", "--test-id", test_id,
               "--out", evidence_dir, "--"] + cmd
    start = time.time()
    proc = subprocess.run(cmd, cwd=tree, env=_python_env([UTILS, PACKAGE_ROOT]), capture_output=True,
                          text=True, timeout=1800)
    wall = time.time() - start
    if not os.path.exists(out):
        return {"passed": False, "wall_s": wall,
                "problems": ["runner exited %d: %s" % (proc.returncode, proc.stderr[-500:])]}
    with open(out) as f:
        result = json.load(f)
    os.unlink(out)
    result["wall_s"] = wall
    return result
