#!/usr/bin/env python3
"""Replay minitron's merge-request history and check what CI catches.

    verify_history.py [--mr ID ...] [--suite unit|e2e|all] [--e2e ID ...]
                      [--write] [--json-out FILE]

The workload root (minus history/) is copied to a scratch directory that
plays the role of the main branch.  MRs are applied in order with
``git apply -p1``; each one is tested (pytest unit suite and/or the e2e tests
of the manifest as it stands in that tree); a merged MR stays applied, a
rejected one is reverted before the next MR, exactly as the history claims.

For each tested MR the failing tests are compared with index.json: a
regression must be caught by exactly the recorded ``caught_by`` (restricted
to the suites that were run), a non-regression must pass everything.
``--write`` stores the observed failures as ``caught_by`` instead.  MRs not
named with ``--mr`` are still applied (to keep later patches applicable) but
not tested.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HISTORY_DIR = os.path.dirname(os.path.abspath(__file__))
WORKLOAD_ROOT = os.path.dirname(HISTORY_DIR)
INDEX = os.path.join(HISTORY_DIR, "index.json")
# The evaluation's helpers for copying the workload and applying its patches.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(WORKLOAD_ROOT))),
                                "utils"))
from eval.workspace import apply_patch, copy_workload  # noqa: E402

FAILED_LINE = re.compile(r"^(FAILED|ERROR) (\S+)")


def make_scratch_tree():
    scratch = tempfile.mkdtemp(prefix="minitron_history_")
    return copy_workload(WORKLOAD_ROOT, os.path.join(scratch, "minitron"))


def run_unit_suite(tree):
    """Node ids (relative to the workload root) of failing unit tests."""
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rfE", "-p", "no:cacheprovider",
         "tests/unit"], cwd=tree, capture_output=True, text=True, timeout=1800)
    failures = set()
    for line in proc.stdout.splitlines():
        match = FAILED_LINE.match(line)
        if match:
            failures.add(match.group(2))
    if proc.returncode not in (0, 1) and not failures:
        failures.add(f"tests/unit (pytest exit code {proc.returncode})")
    return failures


def run_e2e_suite(tree, only=None):
    """Ids of failing e2e tests from the tree's own manifest and runner."""
    sys.path.insert(0, os.path.join(tree, "ci"))
    try:
        for name in ("manifest", "run_e2e"):
            sys.modules.pop(name, None)
        import manifest
        import run_e2e
        ids = [t["id"] for t in manifest.load_manifest()["tests"]]
        if only:
            ids = [i for i in ids if i in only]
        return {i for i in ids if not run_e2e.run_test(i)["passed"]}
    finally:
        sys.path.pop(0)
        for name in ("manifest", "run_e2e"):
            sys.modules.pop(name, None)


def expected_for(entry, suite, e2e_only):
    expected = set(entry.get("caught_by", []))
    if suite == "unit":
        return {t for t in expected if t.startswith("tests/")}
    if suite == "e2e":
        expected = {t for t in expected if not t.startswith("tests/")}
    if e2e_only:
        expected = {t for t in expected if t.startswith("tests/") or t in e2e_only}
    return expected


def _save(opts, index, report):
    if opts.write:
        with open(INDEX, "w") as f:
            json.dump(index, f, indent=2)
            f.write("\n")
    if opts.json_out:
        with open(opts.json_out, "w") as f:
            json.dump(report, f, indent=2)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mr", action="append", default=None, help="MR ids to test")
    parser.add_argument("--suite", choices=["unit", "e2e", "all"], default="all")
    parser.add_argument("--e2e", action="append", default=None, help="restrict e2e ids")
    parser.add_argument("--write", action="store_true", help="record failures in index.json")
    parser.add_argument("--json-out", default=None)
    opts = parser.parse_args(argv)

    with open(INDEX) as f:
        index = json.load(f)
    tree = make_scratch_tree()
    report, mismatches = [], 0
    try:
        for entry in index:
            patch = os.path.join(HISTORY_DIR, entry["patch"])
            apply_patch(tree, patch)
            if opts.mr is None or entry["id"] in opts.mr:
                start = time.time()
                failures = set()
                if opts.suite in ("unit", "all"):
                    failures |= run_unit_suite(tree)
                if opts.suite in ("e2e", "all"):
                    failures |= run_e2e_suite(tree, opts.e2e)
                expected = expected_for(entry, opts.suite, opts.e2e)
                if opts.write:
                    # Replace only the part of caught_by for the suites that ran.
                    kept = set(entry.get("caught_by", [])) - expected_for(
                        {"caught_by": entry.get("caught_by", [])}, opts.suite, opts.e2e)
                    entry["caught_by"] = sorted(kept | failures)
                    entry["verified"] = (
                        "caught_by recorded by history/verify_history.py --write "
                        f"({'full unit + e2e' if opts.suite == 'all' else opts.suite} "
                        "suite run with this MR applied)")
                ok = opts.write or failures == expected
                mismatches += 0 if ok else 1
                report.append({"id": entry["id"], "failures": sorted(failures),
                               "expected": sorted(expected), "ok": ok,
                               "wall_s": round(time.time() - start, 1)})
                print(f"{'OK  ' if ok else 'DIFF'} {entry['id']} ({entry['kind']}, "
                      f"regression={entry['regression']}) failures={len(failures)} "
                      f"wall={report[-1]['wall_s']}s", flush=True)
                if not ok:
                    print(f"     observed: {sorted(failures)}\n     expected: {sorted(expected)}")
                # Save after every MR: a full replay takes long and may be interrupted.
                _save(opts, index, report)
            if not entry["merged"]:
                apply_patch(tree, patch, reverse=True)
    finally:
        shutil.rmtree(os.path.dirname(tree), ignore_errors=True)

    _save(opts, index, report)
    print(f"{len(report) - mismatches}/{len(report)} MRs behave as recorded")
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
